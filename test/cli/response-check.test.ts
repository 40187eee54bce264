// The CLI checks each answer against its route's response schema (packages/cli/src/client/rest.ts),
// with checks compiled ahead of time from the route table (scripts/cli-response-checks.mjs,
// run by `npm run build`). Here: those checks say what TypeBox says, and an answer that is
// not what its route declares is RANKD_RESPONSE_INVALID (exit 70), served by a real HTTPS
// server on loopback that the CLI trusts.
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import 'reflect-metadata'; // @peculiar/x509 (test-pki) needs it loaded first
import t, { type Test } from 'tap';
import { Check, Create } from 'typebox/value';
import type Type from 'typebox';
import { ROUTES, type RouteSpec } from '@rankd/protocol/routes';
import { routeFileName } from '@rankd/protocol/route-id';
import { runCli } from '../helpers/daemons.js';
import { issueServer, makeCa } from '../helpers/test-pki.js';

const CHECKS = join(import.meta.dirname, '../../packages/cli/dist/client/response-checks');
const table: Record<string, RouteSpec> = ROUTES;
const isSchema = (value: unknown): value is Type.TSchema =>
  typeof value === 'object' && value !== null && '~kind' in value;

/** A valid value, where TypeBox can make one (it cannot for strings with a pattern). */
function created(schema: Type.TSchema): unknown[] {
  try {
    return [Create(schema)];
  } catch {
    return [];
  }
}

/**
 * Values each check is tried on: a valid one where TypeBox makes one, and ones broken at the
 * top and one level down. Real answers, valid ones, go through these checks in every CLI test.
 */
function samples(schema: Type.TSchema): unknown[] {
  const made = created(schema);
  const [valid] = made;
  const broken: unknown[] = [null, [], 'text', 0, {}];
  if (typeof valid === 'object' && valid !== null && !Array.isArray(valid)) {
    for (const key of Object.keys(valid)) {
      const { [key]: _, ...without } = valid as Record<string, unknown>;
      broken.push(without, { ...valid, [key]: { unexpected: [1] } });
    }
  }
  return [...made, ...broken];
}

t.test("every route's ahead-of-time check agrees with TypeBox on its answers", async (t) => {
  let compared = 0;
  for (const [id, spec] of Object.entries(table)) {
    if (spec.upgrade) continue;
    const { checks } = (await import(pathToFileURL(join(CHECKS, `${routeFileName(id)}.js`)).href)) as {
      checks: Record<number, (value: unknown) => boolean>;
    };
    const declared = Object.entries(spec.schema?.response ?? {}).filter(
      ([status, schema]) => /^2\d\d$/.test(status) && status !== '204' && isSchema(schema),
    );
    t.same(Object.keys(checks).sort(), declared.map(([status]) => status).sort(), `${id}: a check per JSON answer`);
    for (const [status, schema] of declared) {
      for (const value of samples(schema)) {
        const verdict = Check(schema as Type.TSchema, value);
        const ours = checks[Number(status)]!(value);
        if (ours !== verdict) t.fail(`${id} ${status}: TypeBox says ${verdict} of ${JSON.stringify(value)}`);
        compared++;
      }
    }
  }
  t.ok(compared > 200, `${compared} answers compared`);
});

/** A controller stand-in on loopback answering every request with `status` and `body`. */
type StandIn = { env: NodeJS.ProcessEnv; requests: () => string[] };
async function standIn(t: Test, status: number, body: string): Promise<StandIn> {
  const ca = await makeCa('CN=rankd test CA, O=rankd');
  const leaf = await issueServer(ca);
  const dir = t.testdir();
  const caFile = join(dir, 'ca.crt');
  writeFileSync(caFile, ca.certPem);
  const seen: string[] = [];
  const server: Server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  const env = { RANKD_URL: `https://127.0.0.1:${port}`, RANKD_TOKEN: 'test-token', RANKD_CA: caFile, RANKD_HOME: dir };
  return { env, requests: () => seen };
}

t.test('an answer of another shape: RANKD_RESPONSE_INVALID, naming the route and where it departs', async (t) => {
  const server = await standIn(t, 200, JSON.stringify({ name: 7, role: 'admin' }));
  const r = await runCli(['whoami'], server.env);
  t.equal(r.code, 70, r.stderr);
  t.match(r.stderr, /answer to GET \/v1\/whoami \(200\) is not what the route declares: .*RANKD_RESPONSE_INVALID/);
  t.equal(r.stdout, '', 'nothing of the answer is printed');
  t.same(server.requests(), ['GET /v1/whoami']);
});

t.test('an answer that is not JSON, or of a status the route does not declare: the same refusal', async (t) => {
  const html = await standIn(t, 200, '<html>a proxy page</html>');
  const r = await runCli(['nodes'], html.env);
  t.equal(r.code, 70, r.stderr);
  t.match(r.stderr, /GET \/v1\/nodes \(200\) .*not JSON: "<html>a proxy page<\/html>" \(RANKD_RESPONSE_INVALID\)/);
  const accepted = await standIn(t, 202, JSON.stringify({ nodes: [] }));
  const s = await runCli(['nodes'], accepted.env);
  t.equal(s.code, 70, s.stderr);
  t.match(s.stderr, /declares no answer with status 202 \(RANKD_RESPONSE_INVALID\)/);
});

t.test('an answer that matches goes through: the stand-in answers what the route declares', async (t) => {
  const server = await standIn(t, 200, JSON.stringify({ nodes: [] }));
  const r = await runCli(['nodes', '--json'], server.env);
  t.equal(r.code, 0, r.stderr);
  t.same(JSON.parse(r.stdout), { nodes: [] });
});
