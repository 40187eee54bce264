// The OpenAPI document is a contract: the one a real controller serves is valid OpenAPI 3.1,
// names every route of the route table, and is what the dashboard's client types were
// generated from.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ROUTES, type RouteSpec } from '@rankd/protocol/routes';
import { startController } from '../helpers/daemons.js';

interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  responses?: Record<string, unknown>;
}
interface OpenApiDocument {
  openapi: string;
  info: { description?: string };
  paths: Record<string, Record<string, Operation> | undefined>;
}

/** What packages/dashboard/scripts/openapi-types.mjs exports: the test renders exactly as the script does. */
interface TypesScript {
  SCHEMA_FILE: string;
  renderTypes(document: unknown): Promise<string>;
  withoutHeader(text: string): string;
}
// a computed specifier: the script is plain JavaScript, outside the type-checked projects
const typesScript = new URL('../../packages/dashboard/scripts/openapi-types.mjs', import.meta.url).href;

const controller = await startController();
t.teardown(() => controller.stop());
const served = await controller.api<OpenApiDocument>('/v1/openapi.json');
const doc = served.body;

/** Where the document still speaks OpenAPI 3.0, which the 3.1 meta-schema cannot see: it takes any object as a Schema Object. */
function thirtyOnlyForms(node: unknown, at = '#'): string[] {
  if (typeof node !== 'object' || node === null) return [];
  if (Array.isArray(node)) return node.flatMap((item, i) => thirtyOnlyForms(item, `${at}/${i}`));
  return Object.entries(node).flatMap(([key, value]) => {
    const here = `${at}/${key}`;
    // keys of `properties` name fields, not keywords
    const isKeyword = !at.endsWith('/properties');
    const found =
      isKeyword &&
      (key === 'nullable' || ((key === 'exclusiveMinimum' || key === 'exclusiveMaximum') && typeof value === 'boolean'))
        ? [here]
        : [];
    return [...found, ...thirtyOnlyForms(value, here)];
  });
}

t.test('the served document is valid OpenAPI 3.1', async (t) => {
  t.equal(served.status, 200);
  t.equal(doc.openapi, '3.1.0');
  const validator = new Validator();
  const result = await validator.validate(structuredClone(doc) as unknown as Record<string, unknown>);
  t.equal(
    result.valid,
    true,
    `valid against the OpenAPI ${validator.version} schema${result.valid ? '' : `: ${JSON.stringify(result.errors, null, 2)}`}`,
  );
  t.same(
    thirtyOnlyForms(doc),
    [],
    'no OpenAPI 3.0 forms (nullable, boolean exclusiveMinimum/Maximum) left in the schemas',
  );
});

t.test('every route of the route table is documented, with tags and a summary', async (t) => {
  // /healthz is the one route the document leaves out: it is for probes, not clients
  const table: Record<string, RouteSpec> = ROUTES;
  const entries = Object.keys(table).filter((id) => !table[id]!.schema?.hide);
  t.ok(entries.length > 30, `${entries.length} routes`);
  for (const entry of entries) {
    const [method, route] = entry.split(' ') as [string, string];
    const path = route.replace(/:(\w+)/g, '{$1}');
    const operation = doc.paths[path]?.[method.toLowerCase()];
    t.ok(operation, `${entry} is in the document as ${method} ${path}`);
    t.ok(operation?.summary, `${entry} has a summary`);
    t.ok(operation?.tags?.length, `${entry} has tags`);
  }
});

t.test('every operation documents its answer, not only its refusals', async (t) => {
  // a route without a success schema leaves its answer untyped in the dashboard's client
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(item ?? {})) {
      const answers = Object.keys(operation.responses ?? {}).filter((status) => /^[123]\d\d$/.test(status));
      t.ok(answers.length > 0, `${method.toUpperCase()} ${path} documents its answer`);
    }
  }
  const logs = doc.paths['/v1/jobs/{id}/logs']?.get?.responses?.['200'] as
    { content?: Record<string, unknown> } | undefined;
  t.same(
    Object.keys(logs?.content ?? {}).sort(),
    ['application/vnd.rankd.log-frames', 'application/x-ndjson', 'text/event-stream', 'text/plain'],
    'the logs route names each of its formats',
  );
});

t.test('the WebSockets: the shell is an operation, the agent link is described', async (t) => {
  const shell = doc.paths['/v1/shell']?.get;
  t.ok(shell?.responses?.['101'], 'GET /v1/shell answers 101 Switching Protocols');
  t.ok(shell?.responses?.['401'] && shell.responses['403'], 'and says when it refuses');
  t.match(shell?.description, /rankd\.shell\.v1/, 'its description names the subprotocol');
  t.same(shell?.security, [{ bearer: [] }], 'it takes the API token only');
  t.match(doc.info.description, /\/v1\/agent/, 'the description says where the agent link is');
  t.match(doc.info.description, /mutual TLS/);
  t.same(doc.paths['/v1/enroll']?.post?.security, [], 'enrollment is open: it authenticates by its join token');
});

t.test('the document needs a token, any role', async (t) => {
  t.equal((await controller.api('/v1/openapi.json', { token: null })).status, 401, 'anonymous: 401');
  const reader = await controller.api<{ token: string }>('/v1/users', {
    method: 'POST',
    body: { name: 'rita', role: 'reader' },
  });
  t.equal(reader.status, 201);
  t.equal((await controller.api('/v1/openapi.json', { token: reader.body.token })).status, 200, 'a reader reads it');
});

t.test("the dashboard's client types are generated from this document", async (t) => {
  const script = (await import(typesScript)) as TypesScript;
  const live = await script.renderTypes(doc);
  const file = readFileSync(script.SCHEMA_FILE, 'utf8');
  const committed = script.withoutHeader(file);
  if (committed === live) return t.pass(`${script.SCHEMA_FILE} matches the live document`);
  const [ours, theirs] = [committed.split('\n'), live.split('\n')];
  const line = ours.findIndex((text, i) => text !== theirs[i]);
  const at = line === -1 ? ours.length : line;
  const headerLines = file.split('\n').length - ours.length;
  t.fail(
    `${script.SCHEMA_FILE} is out of date with the API: run \`npm run openapi-types -w @rankd/dashboard\` and commit it`,
    {
      firstDifference: {
        line: headerLines + at + 1,
        committed: ours[at] ?? '(end of file)',
        live: theirs[at] ?? '(end of file)',
      },
    },
  );
});
