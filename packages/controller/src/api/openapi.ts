// The OpenAPI 3.1 document of the REST API, served at GET /v1/openapi.json.
//
// 3.1 because its Schema Objects are JSON Schema 2020-12, which is what TypeBox writes
// (numeric exclusiveMinimum, `type: 'null'` in unions); under 3.0 the same schemas are
// invalid. @fastify/swagger builds the paths from the routes' own schemas; what no route
// schema can say is added here: the WebSocket endpoints, the shared refusals, and the
// document's framing. test/api/openapi.test.ts validates the served document and checks
// that every route of the route table is in it; the dashboard's client types are
// generated from it (packages/dashboard/scripts/openapi-types.mjs).
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { ErrorBody, RANKD_VERSION, ShellControl, ShellEvent } from '@rankd/protocol';
import { AGENT_LINK_NOTE, webSocketPaths } from './openapi-websockets.js';
import { CSRF_HEADER, SESSION_COOKIE } from './dashboard/sessions.js';
import { serveRoutes } from './route-table.js';

const DESCRIPTION = [
  'Nodes and their hardware facts, rank plans, jobs and their logs, the queue, fleet operations',
  '(inventory, exec, ping, doctor, interactive shells), users and tokens, the audit log and metrics.',
  '',
  "Every operation needs an API token (`Authorization: Bearer <token>`), or in a browser the dashboard's",
  'session cookie, unless it says otherwise; and the role behind it must grant the operation (docs/security.md:',
  'one policy table, deny by default). Errors are `{statusCode, code, error, message}` with a stable `code`',
  '(`RANKD_…`); too many failed authentications from one address are answered 429 with Retry-After.',
  '',
  AGENT_LINK_NOTE,
].join('\n');

const TAGS = [
  { name: 'nodes', description: 'The nodes agents registered: state, facts, drain, removal' },
  { name: 'enroll', description: 'Node enrollment: join tokens and node certificates' },
  { name: 'plan', description: 'Rank maps without running anything' },
  { name: 'jobs', description: 'Jobs, their ranks, the queue and their output' },
  { name: 'fleet', description: 'The inventory and commands across nodes: exec, ping, doctor, shell' },
  { name: 'users', description: 'Users, roles and API tokens' },
  { name: 'audit', description: 'Who did what, from where, and the outcome' },
  { name: 'metrics', description: 'The fleet and the controller in numbers, for Prometheus' },
  { name: 'dashboard', description: "The web dashboard's sign-in, session and change events" },
  { name: 'api', description: 'This document' },
];

const refusal = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
});

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * The auth hook answers every operation under the document's security 401 without a valid
 * token or session and 403 when the role does not grant it; no route schema says so, so it
 * is said once here. Operations with their own `security` (open, mutual TLS, the shell)
 * declare their own refusals.
 */
function addAuthRefusals(paths: Record<string, Record<string, unknown> | undefined>): void {
  for (const item of Object.values(paths)) {
    for (const method of METHODS) {
      const operation = item?.[method] as { security?: unknown; responses?: Record<string, unknown> } | undefined;
      if (!operation || operation.security !== undefined) continue;
      operation.responses ??= {};
      operation.responses['401'] ??= { $ref: '#/components/responses/Unauthorized' };
      operation.responses['403'] ??= { $ref: '#/components/responses/Forbidden' };
    }
  }
}

// What @fastify/swagger starts the document from. Typed by its own shape and cast once below:
// the openapi-types release @fastify/swagger uses predates 3.1's mutualTLS security scheme.
const FRAME = {
  openapi: '3.1.0',
  info: { title: 'rankd controller', version: RANKD_VERSION, description: DESCRIPTION },
  tags: TAGS,
  components: {
    securitySchemes: {
      bearer: {
        type: 'http',
        scheme: 'bearer',
        description: 'An API token: the api-token file for the first admin, `rankd token create` for others',
      },
      dashboardSession: {
        type: 'apiKey',
        in: 'cookie',
        name: SESSION_COOKIE,
        description: `The dashboard's session (POST /v1/session); its state-changing requests also carry the session's CSRF token in ${CSRF_HEADER}`,
      },
      nodeCertificate: {
        type: 'mutualTLS',
        description: 'A node certificate this controller issued (POST /v1/enroll)',
      },
    },
    // ErrorBody for the refusals below; the shell's text frames, which no route schema carries
    schemas: { ErrorBody, ShellControl, ShellEvent },
    responses: {
      Unauthorized: refusal('Missing, wrong or revoked API token'),
      Forbidden: refusal("The token's role does not grant this operation"),
    },
  },
  security: [{ bearer: [] }, { dashboardSession: [] }],
};

export const swaggerOptions: FastifyDynamicSwaggerOptions = {
  openapi: FRAME as unknown as FastifyDynamicSwaggerOptions['openapi'],
  transformObject: (documentObject) => {
    if (!('openapiObject' in documentObject)) return documentObject.swaggerObject;
    const document = documentObject.openapiObject;
    const paths = { ...document.paths, ...structuredClone(webSocketPaths) } as Record<
      string,
      Record<string, unknown> | undefined
    >;
    addAuthRefusals(paths);
    return { ...document, paths };
  },
};

/** GET /v1/openapi.json. */
export async function openapiRoutes(app: FastifyInstance): Promise<void> {
  serveRoutes(app, { 'GET /v1/openapi.json': async () => app.swagger() });
}
