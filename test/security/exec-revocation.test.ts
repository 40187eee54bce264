// Revocation ends a running exec: an operator's `POST /v1/exec` (and `rankd exec`) is held
// open by its token like a shell, so revoking the token or removing the user ends its
// commands on the node within 1 s and answers the request at once, each unfinished host
// FAILED with RANKD_CREDENTIAL_REVOKED, while another operator's exec on the same node runs
// to its end. Real controller and agent processes, real tokens, loopback only.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { processAlive } from '../helpers/cluster.js';
import { runCli, spawnDaemon, waitUntil, type ControllerHandle, type Daemon } from '../helpers/daemons.js';
import { fleetUnderTest, type FleetUnderTest } from '../fleet/helpers.js';

/** The bound, measured from the moment the revoking request was answered. */
const WITHIN_MS = 1000;

interface HostResult {
  host: string;
  status: string;
  rc: number | null;
  stdout: string;
  error: { code: string; message: string } | null;
}
interface Report {
  hosts: HostResult[];
  summary: { success: number; failed: number; unreachable: number };
  revoked?: { code: string; message: string };
}

/** A POST /v1/exec whose answer is timed: when it came, its status and body. */
function postExec(
  c: ControllerHandle,
  token: string,
  body: unknown,
): Promise<{ at: number; status: number; body: Report }> {
  const u = new URL(c.url);
  const data = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const headers = {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'content-length': String(data.length),
    };
    const req = https.request(
      { host: u.hostname, port: u.port, path: '/v1/exec', method: 'POST', ca: c.ca, headers, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ at: Date.now(), status: res.statusCode!, body: JSON.parse(text) as Report }));
      },
    );
    req.on('error', reject);
    req.setTimeout(90_000, () => req.destroy(new Error('no answer to POST /v1/exec within 90 s')));
    req.end(data);
  });
}

async function addUser(
  env: NodeJS.ProcessEnv,
  name: string,
  role: string,
): Promise<{ token: string; accessor: string }> {
  const r = await runCli(['user', 'add', name, '--role', role, '--json'], env);
  if (r.code !== 0) throw new Error(`user add ${name}: ${r.stderr}`);
  return JSON.parse(r.stdout) as { token: string; accessor: string };
}

/** argv of a command that records its pid, then appends a line to `marker` every 50 ms, `lines` times (then prints "done"). */
function markerLoop(dir: string, name: string, lines: number): string[] {
  const script = `echo $$ > ${dir}/${name}.pid; i=0; while [ $i -lt ${lines} ]; do echo x >> ${dir}/${name}.marker; i=$((i+1)); sleep 0.05; done; echo done`;
  return ['sh', '-c', script];
}

/** The pid a marker loop recorded, once it is writing. */
async function running(dir: string, name: string): Promise<number> {
  await waitUntil(
    `${name}'s command writes its marker`,
    30_000,
    () => existsSync(join(dir, `${name}.marker`)) && statSync(join(dir, `${name}.marker`)).size > 0,
  );
  return Number(readFileSync(join(dir, `${name}.pid`), 'utf8').trim());
}

const markerSize = (dir: string, name: string): number => statSync(join(dir, `${name}.marker`)).size;

/** A bystander: another operator's exec on the same node, which must run to its end untouched. */
function bystander(f: FleetUnderTest, node: string, dir: string, token: string) {
  // 200 lines of 50 ms or more: still running well after the revocation
  return postExec(f.controller, token, { pattern: node, command: markerLoop(dir, 'bystander', 200), timeout: 60 });
}

/** The command of `name` is gone from the node within the bound after `answeredAt`, and its marker no longer grows. */
async function assertGone(t: Test, dir: string, name: string, pid: number, answeredAt: number): Promise<void> {
  await waitUntil(
    `${name}'s command (pid ${pid}) ended on the node`,
    Math.max(50, answeredAt + WITHIN_MS - Date.now()),
    () => !processAlive(pid),
    10,
  );
  t.pass(`${name}'s command (pid ${pid}) was gone within ${WITHIN_MS} ms of the answer`);
  const size = markerSize(dir, name);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(markerSize(dir, name), size, `${name}'s marker stopped growing`);
}

async function assertBystanderUntouched(
  t: Test,
  dir: string,
  pid: number,
  answer: Promise<{ status: number; body: Report }>,
): Promise<void> {
  t.ok(processAlive(pid), "the other operator's command still runs after the revocation");
  const size = markerSize(dir, 'bystander');
  await waitUntil("the other operator's marker grows on", 5000, () => markerSize(dir, 'bystander') > size);
  const done = await answer;
  t.equal(done.status, 200);
  t.equal(done.body.revoked, undefined, 'its report says nothing of a revocation');
  t.match(done.body.hosts[0], { status: 'SUCCESS', rc: 0, stdout: 'done\n', error: null }, 'it ran to its end');
  t.equal(readFileSync(join(dir, 'bystander.marker'), 'utf8'), 'x\n'.repeat(200), 'every line of it was written');
}

function assertRevokedReport(t: Test, what: string, r: { status: number; body: Report }, message: RegExp): void {
  t.equal(r.status, 200, `${what}: answered with the report`);
  t.equal(r.body.revoked?.code, 'RANKD_CREDENTIAL_REVOKED', `${what}: the report says it was revoked`);
  t.match(r.body.revoked?.message ?? '', message, `${what}: and why`);
  t.match(
    r.body.hosts[0],
    { status: 'FAILED', rc: null, error: { code: 'RANKD_CREDENTIAL_REVOKED' } },
    `${what}: the unfinished host is FAILED with RANKD_CREDENTIAL_REVOKED`,
  );
  t.same(r.body.summary, { success: 0, failed: 1, unreachable: 0 });
}

async function exitOf(d: Daemon): Promise<{ code: number | null } | null> {
  return Promise.race([d.exited, new Promise<null>((r) => setTimeout(() => r(null), 10_000))]);
}

function scratch(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-exec-revoke-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test(
  "revoking a token ends its exec on the node within 1 s, answers it as revoked, and leaves another operator's exec alone",
  async (t) => {
    const f = await fleetUnderTest(t, ['xr1']);
    const c = f.controller;
    const dir = scratch(t);
    const otto = await addUser(f.env, 'otto', 'operator');
    const oscar = await addUser(f.env, 'oscar', 'operator');

    // otto: one exec over the API (its answer is timed) and one with `rankd exec`
    const api = postExec(c, otto.token, { pattern: 'xr1', command: markerLoop(dir, 'api', 100_000), timeout: 300 });
    const cli = spawnDaemon(['exec', 'xr1', '--', ...markerLoop(dir, 'cli', 100_000)], {
      ...f.env,
      RANKD_TOKEN: otto.token,
    });
    t.teardown(() => cli.stop('SIGKILL'));
    const other = bystander(f, 'xr1', dir, oscar.token);
    const pids = {
      api: await running(dir, 'api'),
      cli: await running(dir, 'cli'),
      bystander: await running(dir, 'bystander'),
    };

    const revoked = await c.api(`/v1/tokens/${otto.accessor}`, { method: 'DELETE' });
    const answeredAt = Date.now();
    t.equal(revoked.status, 204);

    const answer = await api;
    t.ok(
      answer.at - answeredAt <= WITHIN_MS,
      `the exec was answered ${answer.at - answeredAt} ms after the revocation's answer (bound ${WITHIN_MS} ms)`,
    );
    assertRevokedReport(t, 'POST /v1/exec', answer, /ended: its API token [0-9a-f]{16} was revoked/);
    await assertGone(t, dir, 'api', pids.api, answeredAt);
    await assertGone(t, dir, 'cli', pids.cli, answeredAt);

    const exit = await exitOf(cli);
    t.equal(exit?.code, 77, 'rankd exec exits 77');
    t.match(
      cli.output(),
      /^xr1 \| FAILED \| ended: its API token [0-9a-f]{16} was revoked$/m,
      'it shows the host as ended by the revocation',
    );
    t.match(
      cli.output(),
      /rankd: RANKD_CREDENTIAL_REVOKED: ended: its API token [0-9a-f]{16} was revoked; the commands still running were ended/,
      'and says why',
    );

    await assertBystanderUntouched(t, dir, pids.bystander, other);

    // nothing more runs with the revoked token
    const again = await postExec(c, otto.token, {
      pattern: 'xr1',
      command: ['sh', '-c', `touch ${dir}/after-revocation`],
    });
    t.equal(again.status, 401, 'the revoked token is refused');
    t.notOk(existsSync(join(dir, 'after-revocation')), 'and nothing ran');

    const audit = await c.api<{
      entries: Array<{ route: string; accessor: string | null; reason: string; decision: string }>;
    }>('/v1/audit?limit=1000');
    const entries = audit.body.entries.filter(
      (e) => e.route === '/v1/exec' && e.accessor === otto.accessor && e.decision === 'allow',
    );
    t.equal(entries.length, 2, "both of otto's execs are in the audit log");
    for (const e of entries)
      t.match(
        e.reason,
        /^exec ended by revocation: RANKD_CREDENTIAL_REVOKED: ended: its API token [0-9a-f]{16} was revoked$/,
        "the exec's audit entry says it was ended by revocation",
      );
  },
);

t.test(
  "removing a user ends the execs of every one of its tokens within 1 s; another operator's exec runs on",
  async (t) => {
    const f = await fleetUnderTest(t, ['xr2']);
    const c = f.controller;
    const dir = scratch(t);
    const olga = await addUser(f.env, 'olga', 'operator');
    const oscar = await addUser(f.env, 'oscar', 'operator');
    const second = await c.api<{ token: string }>('/v1/tokens', {
      method: 'POST',
      body: { description: 'second' },
      token: olga.token,
    });
    t.equal(second.status, 201);

    const api = postExec(c, second.body.token, {
      pattern: 'xr2',
      command: markerLoop(dir, 'api', 100_000),
      timeout: 300,
    });
    const cli = spawnDaemon(['exec', 'xr2', '--', ...markerLoop(dir, 'cli', 100_000)], {
      ...f.env,
      RANKD_TOKEN: olga.token,
    });
    t.teardown(() => cli.stop('SIGKILL'));
    const other = bystander(f, 'xr2', dir, oscar.token);
    const pids = {
      api: await running(dir, 'api'),
      cli: await running(dir, 'cli'),
      bystander: await running(dir, 'bystander'),
    };

    const removed = await c.api('/v1/users/olga', { method: 'DELETE' });
    const answeredAt = Date.now();
    t.equal(removed.status, 204);

    const answer = await api;
    t.ok(
      answer.at - answeredAt <= WITHIN_MS,
      `the exec was answered ${answer.at - answeredAt} ms after the removal's answer (bound ${WITHIN_MS} ms)`,
    );
    assertRevokedReport(t, 'POST /v1/exec with her second token', answer, /ended: its user "olga" was removed/);
    await assertGone(t, dir, 'api', pids.api, answeredAt);
    await assertGone(t, dir, 'cli', pids.cli, answeredAt);

    const exit = await exitOf(cli);
    t.equal(exit?.code, 77, 'rankd exec exits 77');
    t.match(cli.output(), /rankd: RANKD_CREDENTIAL_REVOKED: ended: its user "olga" was removed/, 'and says why');

    await assertBystanderUntouched(t, dir, pids.bystander, other);
  },
);
