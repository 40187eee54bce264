// The WebSocket endpoints in the OpenAPI document.
//
// They are upgrades the agent gateway dispatches on the HTTP server's 'upgrade' event,
// before fastify routes anything (gateway/agent-gateway.ts), so @fastify/swagger never sees
// them. OpenAPI has no words for frames: the shell is described as the GET it starts as,
// whose success is 101 Switching Protocols, with the frames in prose and the JSON text
// frames as component schemas. The agent link (/v1/agent) is no client's business; the
// document's description says where it is.
import { SHELL_PATH, SHELL_SUBPROTOCOL, STDIN_PATH, STDIN_SUBPROTOCOL, SUBPROTOCOL } from '@rankd/protocol';

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

const query = (name: string, description: string, schema: Record<string, unknown>, required = false) => ({
  in: 'query',
  name,
  description,
  required,
  schema,
});

const subprotocolHeader = (subprotocol: string, what: string) => ({
  in: 'header',
  name: 'Sec-WebSocket-Protocol',
  description: `The subprotocols the client offers; ${what} must be among them`,
  required: true,
  schema: { type: 'string', examples: [subprotocol] },
});

/** Path items to add to the document, keyed by path. */
export const webSocketPaths = {
  [STDIN_PATH]: {
    get: {
      tags: ['jobs'],
      summary: "A job's stdin: a WebSocket whose bytes reach the ranks that read it (like srun --input)",
      description: [
        `Upgrades to a WebSocket (RFC 6455) with subprotocol \`${STDIN_SUBPROTOCOL}\`; \`rankd run\` opens it right after its submission when its stdin is not /dev/null.`,
        "The job must have been submitted with `stdin` (a rank, or `all`). The API token goes in the upgrade request's `Authorization: Bearer` header;",
        "only the job's owner (any role that submits) or an admin may write to it, and a job has one writer: a second connection is refused.",
        'Anything wrong is answered as plain HTTP with an error body and no socket opens; a connection opens only once its audit entry is written.',
        '',
        'Frames once upgraded:',
        "- **binary, client → controller**: the bytes, in order, never interpreted. The client's close is the stdin's end: each rank that reads it gets EOF after the last byte.",
        '- **text, controller → client**: one JSON event before the controller closes: `{"type":"closed","reason"}` once no rank takes more (each closed its stdin or ended), or `{"type":"error","code","message"}`.',
        '',
        'Flow control: the controller stops reading the socket while a rank has a window of bytes unread, so a fast producer waits.',
        "A job whose stdin no client opens within 10 s of its first reading rank's start gets EOF.",
      ].join('\n'),
      security: [{ bearer: [] }],
      parameters: [
        query('job', 'The job', { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' }, true),
        subprotocolHeader(STDIN_SUBPROTOCOL, 'the stdin one'),
      ],
      responses: {
        101: {
          description: `Switching Protocols: the WebSocket is open, speaking \`${STDIN_SUBPROTOCOL}\``,
          headers: { 'Sec-WebSocket-Protocol': { schema: { type: 'string', const: STDIN_SUBPROTOCOL } } },
        },
        400: refused(`The subprotocol \`${STDIN_SUBPROTOCOL}\` was not offered, or the job id is malformed`),
        401: refused('Missing, wrong or revoked API token'),
        403: refused("The caller is neither the job's owner nor an admin"),
        404: refused('No such job'),
        409: refused(
          '`RANKD_STDIN_UNAVAILABLE`: the job reads no stdin, has ended, or its stdin already has its writer or ended',
        ),
        429: refused('Too many failed authentications from this address; see Retry-After'),
        503: refused('The audit log cannot be written'),
      },
    },
  },
  [SHELL_PATH]: {
    get: {
      tags: ['fleet'],
      summary:
        'An interactive shell on one node: a WebSocket relayed to a pseudo-terminal there (like `kubectl exec -it`)',
      description: [
        `Upgrades to a WebSocket (RFC 6455) with subprotocol \`${SHELL_SUBPROTOCOL}\`; this is what \`rankd shell NODE\` opens.`,
        "The API token goes in the upgrade request's `Authorization: Bearer` header and its role must grant `shell` (operator, admin).",
        'Anything wrong (token, role, node, terminal size, subprotocol) is answered as plain HTTP with an error body and no socket opens;',
        'a session opens only once its audit entry is written.',
        '',
        'Frames once upgraded:',
        "- **binary**, both ways: terminal bytes (client → the program's input, controller → its output).",
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
        query('term', 'TERM of the remote program', {
          type: 'string',
          pattern: '^[A-Za-z0-9._+-]{1,64}$',
          default: 'xterm-256color',
        }),
        query('user', 'Unix user to run as (the agent decides who is allowed)', { type: 'string', maxLength: 64 }),
        query('cwd', 'Working directory', { type: 'string' }),
        {
          ...query('arg', "The command and its arguments, one per `arg`, in order; default: the user's login shell", {
            type: 'array',
            items: { type: 'string' },
          }),
          style: 'form',
          explode: true,
        },
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
        403: refused("The token's role does not grant `shell`"),
        404: refused('No such node'),
        409: refused("The node's agent has no `pty` capability"),
        429: refused('Too many failed authentications from this address; see Retry-After'),
        503: refused("The node's agent is not connected, or the audit log cannot be written"),
      },
    },
  },
};
