// `rankd … --json` prints the document the REST route answers for the same question, whole:
// one table of commands, each run as the built CLI against a real controller and agent and
// compared with the REST answer. The two calls cannot happen at the same instant, and some
// fields move on their own (a node's lastSeen at each heartbeat, a token's lastUsedAt, the
// scheduler's lastPassMs): so the REST answer is taken before and after the CLI runs, and
// only a pair that held still around it is compared (else the triple is taken again, a few
// times at most). What the CLI printed then had to be that very document.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { runCli, type ControllerHandle } from '../helpers/daemons.js';
import { localCluster } from '../helpers/cluster.js';

const NODE = 'solo';
const ATTEMPTS = 5;

const c = await localCluster(t, [NODE]);
const { controller, env } = c;

/** A REST answer, or the test fails with its status. */
async function rest(ctl: ControllerHandle, path: string, body?: unknown): Promise<unknown> {
  const r = await ctl.api(path, body === undefined ? {} : { method: 'POST', body });
  if (r.status !== 200)
    throw new Error(`${body === undefined ? 'GET' : 'POST'} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The CLI's document and the REST answer it must equal: one that was the same just before and just after the CLI ran. */
async function bracketed(
  args: string[],
  path: () => string,
  body?: unknown,
): Promise<{ printed: unknown; answered: unknown; attempts: number }> {
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const before = await rest(controller, path(), body);
    const r = await runCli(args, env);
    if (r.code !== 0) throw new Error(`rankd ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    const after = await rest(controller, path(), body);
    if (same(before, after)) return { printed: JSON.parse(r.stdout) as unknown, answered: after, attempts: attempt };
  }
  throw new Error(`GET ${path()} never held still around rankd ${args.join(' ')} in ${ATTEMPTS} tries`);
}

// something in every list: a user with a token of its own, a finished job, audit entries
const alice = await runCli(['user', 'add', 'alice', '--role', 'user', '--unix-user', 'nobody', '--json'], env);
if (alice.code !== 0) throw new Error(`user add: ${alice.stderr}`);
const job = await runCli(['run', '-q', '--name', 'json-rest', '-n', '1', '-c', '1', '--', 'true'], env);
if (job.code !== 0) throw new Error(`rankd run: ${job.stderr}`);
const { jobs } = (await rest(controller, '/v1/jobs')) as { jobs: Array<{ id: string }> };
const jobId = jobs[0]!.id;

interface Row {
  /** The command line, without --json (or with --format json where that is the spelling). */
  args: string[];
  /** The REST question it asks: a path (GET) or a path and a body (POST). */
  path: () => string;
  body?: unknown;
}

const since = Date.now() - 2 * 3600_000;
const rows: Row[] = [
  { args: ['jobs', '--json'], path: () => '/v1/jobs' },
  { args: ['job', jobId, '--json'], path: () => `/v1/jobs/${jobId}` },
  { args: ['nodes', '--json'], path: () => '/v1/nodes' },
  { args: ['queue', '--json'], path: () => '/v1/queue' },
  {
    args: ['plan', '-n', '1', '-c', '1', '--json'],
    path: () => '/v1/plan',
    body: { placement: { ntasks: 1, cpusPerRank: 1 } },
  },
  {
    args: ['plan', '-n', '1', '-c', '1', '--format', 'json'],
    path: () => '/v1/plan',
    body: { placement: { ntasks: 1, cpusPerRank: 1 } },
  },
  { args: ['facts', NODE, '--json'], path: () => `/v1/nodes/${NODE}/facts` },
  { args: ['facts', NODE, '--format', 'json'], path: () => `/v1/nodes/${NODE}/facts` },
  { args: ['user', 'list', '--json'], path: () => '/v1/users' },
  { args: ['token', 'list', '--json'], path: () => '/v1/tokens' },
  { args: ['token', 'list', '--user', 'alice', '--json'], path: () => '/v1/tokens?user=alice' },
  { args: ['join-token', 'list', '--json'], path: () => '/v1/join-tokens' },
  { args: ['audit', '--json'], path: () => '/v1/audit?limit=1000' },
  // every entry is younger than two hours, whichever "now" each side counted back from
  { args: ['audit', '--since', '2h', '--json'], path: () => `/v1/audit?since=${since}` },
  { args: ['inventory', '--json'], path: () => '/v1/inventory' },
  { args: ['inventory', 'match', NODE, '--json'], path: () => `/v1/inventory/match?pattern=${NODE}` },
  // not compared: ping, exec and doctor run a new probe at each call (latencies, outputs),
  // so no two answers are equal; they print the report of their POST as it came. Nor
  // user add and token create: each call mints a new token.
];

for (const row of rows) {
  t.test(`rankd ${row.args.join(' ')} prints ${row.body === undefined ? 'GET' : 'POST'} ${row.path()}`, async (t) => {
    const { printed, answered, attempts } = await bracketed(row.args, row.path, row.body);
    t.same(printed, answered, `the same document${attempts > 1 ? ` (state held still on try ${attempts})` : ''}`);
    // a list in its envelope, never a bare array
    t.notOk(Array.isArray(printed), 'an object, not a bare array');
  });
}

t.test('the plan document carries schedule, as POST /v1/plan answers it', async (t) => {
  const r = await runCli(['plan', '-n', '1', '-c', '1', '--json'], env);
  t.equal(r.code, 0, r.stderr);
  t.same((JSON.parse(r.stdout) as { schedule: unknown }).schedule, { startsNow: true, reason: null });
});

t.test(
  'POST /v1/plan: the deprecated top-level form answers as placement does; both at once are refused',
  async (t) => {
    const nested = await rest(controller, '/v1/plan', { placement: { ntasks: 1, cpusPerRank: 1 } });
    const topLevel = await rest(controller, '/v1/plan', { ntasks: 1, cpusPerRank: 1 });
    t.same(topLevel, nested, 'the same answer');
    const both = await controller.api<{ code: string; message: string }>('/v1/plan', {
      method: 'POST',
      body: { placement: { ntasks: 1 }, cpusPerRank: 1 },
    });
    t.equal(both.status, 400);
    t.equal(both.body.code, 'RANKD_INVALID_REQUEST');
    t.match(
      both.body.message,
      /give the placement in "placement" only; cpusPerRank at the top level is the deprecated form/,
    );
    const doc = (await rest(controller, '/v1/openapi.json')) as {
      paths: Record<
        string,
        {
          post: {
            requestBody: {
              content: Record<string, { schema: { properties: Record<string, { deprecated?: boolean }> } }>;
            };
          };
        }
      >;
    };
    const props = doc.paths['/v1/plan']!.post.requestBody.content['application/json']!.schema.properties;
    t.equal(props['ntasks']?.deprecated, true, 'OpenAPI marks the top-level ntasks deprecated');
    t.notOk(props['placement']?.deprecated, 'and placement not');
  },
);

t.test('the offline plan prints the same document as the controller for the same node', async (t) => {
  // the node's facts as the controller holds them, as the one file of an offline cluster
  const dir = join(t.testdir(), 'facts');
  mkdirSync(dir);
  writeFileSync(join(dir, `${NODE}.json`), JSON.stringify(await rest(controller, `/v1/nodes/${NODE}/facts`)));
  const { nodes } = (await rest(controller, '/v1/nodes')) as { nodes: Array<{ name: string; address: string | null }> };
  const address = nodes.find((n) => n.name === NODE)?.address;
  t.ok(address, 'the node has an address');
  // the port is pinned: the controller picks a free one, the offline planner has none to pick from
  const flags = ['-n', '2', '-c', '1', '--master-port', '29555'];
  const offline = await runCli(['plan', '--facts-dir', dir, '--address', `${NODE}=${address}`, ...flags, '--json']);
  t.equal(offline.code, 0, offline.stderr);
  const online = await rest(controller, '/v1/plan', { placement: { ntasks: 2, cpusPerRank: 1, masterPort: 29555 } });
  t.same(JSON.parse(offline.stdout), online, 'rank map and schedule alike');
});

t.test('GET /v1/audit?since= takes the forms rankd audit --since takes', async (t) => {
  const ago = await controller.api<{ entries: unknown[] }>('/v1/audit?since=2h');
  t.equal(ago.status, 200);
  t.same(ago.body, await rest(controller, `/v1/audit?since=${since}`), '2h: every entry of the last two hours');
  t.ok(ago.body.entries.length > 0, 'and there are some');
  const bad = await controller.api<{ code: string; message: string }>('/v1/audit?since=2x');
  t.equal(bad.status, 400);
  t.equal(bad.body.code, 'RANKD_INVALID_REQUEST');
  t.match(
    bad.body.message,
    /since=2x: a duration \(e\.g\. 30s, 15m, 2h\) or an ISO time, or milliseconds since the epoch/,
  );
});
