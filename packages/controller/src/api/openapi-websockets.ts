// The WebSocket endpoints in the OpenAPI document.
//
// They are upgrades the agent gateway dispatches on the HTTP server's 'upgrade' event,
// before fastify routes anything (gateway/agent-gateway.ts), so @fastify/swagger never sees
// them. OpenAPI has no words for frames: the shell is described as the GET it starts as,
// whose success is 101 Switching Protocols, with the frames in prose and the JSON text
// frames as component schemas. The agent link (/v1/agent) is no client's business; the
// document's description says where it is.
import { SHELL_PATH, SHELL_SUBPROTOCOL, SUBPROTOCOL } from '@rankd/protocol';

const AGENT_PATH = '/v1/agent';

/** For info.description: the WebSocket that is on this port but outside this API. */
export const AGENT_LINK_NOTE =
  `The agent link is a WebSocket on the same port, \`${AGENT_PATH}\` (subprotocol \`${SUBPROTOCOL}\`), ` +
  'and is not part of this API: only node agents open it, authenticated by mutual TLS with the node certificate ' +
  'this controller issued them (`POST /v1/enroll`, renewed by `POST /v1/enroll/renew`), checked on every upgrade ' +
  '(packages/controller/src/gateway/agent-gateway.ts); its messages are the TypeBox schemas of @rankd/protocol.';

const refused = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
});

const query = (name: string, description: string, schema: Record<string, unknown>, required = false) => ({ in: 'query', name, description, required, schema });

/** Path items to add to the document, keyed by path. */
export const webSocketPaths = {
  [SHELL_PATH]: {
    get: {
      tags: ['fleet'],
      summary: 'An interactive shell on one node: a WebSocket relayed to a pseudo-terminal there (like `kubectl exec -it`)',
      description: [
        `Upgrades to a WebSocket (RFC 6455) with subprotocol \`${SHELL_SUBPROTOCOL}\`; this is what \`rankd shell NODE\` opens.`,
        'The API token goes in the upgrade request\'s `Authorization: Bearer` header and its role must grant `shell` (operator, admin).',
        'Anything wrong (token, role, node, terminal size, subprotocol) is answered as plain HTTP with an error body and no socket opens;',
        'a session opens only once its audit entry is written.',
        '',
        'Frames once upgraded:',
        '- **binary**, both ways: terminal bytes (client → the program\'s input, controller → its output).',
        '- **text, client → controller**: JSON control messages, `ShellControl` in the components: `{"type":"resize","cols":C,"rows":R}` or `{"type":"signal","signal":"SIGINT"}`.',
        '- **text, controller → client**: JSON events, `ShellEvent` in the components: `started` (with the pid), then `exit` (code or signal) or `error` (a stable `RANKD_…` code), after which the socket closes.',
        '',
        'A client that goes away hangs the terminal up; a lost agent ends the session with an `error` event.',
      ].join('\n'),
      // the upgrade reads the Authorization header only: no session cookie
      security: [{ bearer: [] }],
      parameters: [
        query('node', 'The node to open the shell on', { type: 'string', maxLength: 256 }, true),
        query('cols', 'Terminal width', { type: 'integer', minimum: 1, maximum: 10_000, default: 80 }),
        query('rows', 'Terminal height', { type: 'integer', minimum: 1, maximum: 10_000, default: 24 }),
        query('term', 'TERM of the remote program', { type: 'string', pattern: '^[A-Za-z0-9._+-]{1,64}$', default: 'xterm-256color' }),
        query('user', 'Unix user to run as (the agent decides who is allowed)', { type: 'string', maxLength: 64 }),
        query('cwd', 'Working directory', { type: 'string' }),
        { ...query('arg', 'The command and its arguments, one per `arg`, in order; default: the user\'s login shell', { type: 'array', items: { type: 'string' } }), style: 'form', explode: true },
        {
          in: 'header',
          name: 'Sec-WebSocket-Protocol',
          description: 'The subprotocols the client offers; the shell one must be among them',
          required: true,
          schema: { type: 'string', examples: [SHELL_SUBPROTOCOL] },
        },
      ],
      responses: {
        101: {
          description: `Switching Protocols: the WebSocket is open, speaking \`${SHELL_SUBPROTOCOL}\``,
          headers: { 'Sec-WebSocket-Protocol': { schema: { type: 'string', const: SHELL_SUBPROTOCOL } } },
        },
        400: refused(`The subprotocol \`${SHELL_SUBPROTOCOL}\` was not offered, or the terminal size is out of range`),
        401: refused('Missing, wrong or revoked API token'),
        403: refused('The token\'s role does not grant `shell`'),
        404: refused('No such node'),
        409: refused('The node\'s agent has no `pty` capability'),
        429: refused('Too many failed authentications from this address; see Retry-After'),
        503: refused('The node\'s agent is not connected, or the audit log cannot be written'),
      },
    },
  },
};
