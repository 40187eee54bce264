// Users, roles, Unix users and job ownership, against a real controller and agent over
// real HTTP: every refusal is a 403 RANKD_FORBIDDEN that says what and why, a user's jobs
// run as its own Unix user, bad job ids and log paths read nothing, a revoked token fails
// at once, and the audit log (read back with `rankd audit --json`) holds each of these.
import t, { type Test } from 'tap';
import type http from 'node:http';
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import { runCli, waitUntil } from '../helpers/daemons.js';
import { localCluster } from '../helpers/cluster.js';

interface Created {
  name: string;
  role: string;
  unixUser: string | null;
  token: string;
}
interface ErrorLike {
  code: string;
  message: string;
}
interface JobLike {
  id: string;
  state: string;
  owner: string | null;
  user: string | null;
  ranks: Array<{ state: string; error: string | null }>;
}
interface AuditLike {
  user: string | null;
  accessor: string | null;
  source: string;
  method: string;
  route: string;
  resource: Record<string, string>;
  argv: string[] | null;
  argvHash: string | null;
  decision: string;
  reason: string;
  status: number | null;
  durationMs: number | null;
}

const isRoot = process.getuid?.() === 0;
const suffix = randomBytes(3).toString('hex');

/** Real Unix users for the role `user`, when root can make them; removed at teardown. */
function unixUsers(t: Test): { alice: string; bob: string; made: boolean } {
  if (!isRoot) return { alice: userInfo().username, bob: 'nobody', made: false };
  const names = { alice: `rkda${suffix}`, bob: `rkdb${suffix}` };
  for (const name of Object.values(names)) {
    execFileSync('useradd', ['--no-create-home', '--shell', '/usr/sbin/nologin', name]);
    t.teardown(() => {
      try {
        execFileSync('userdel', [name]);
      } catch {
        // already gone
      }
    });
  }
  return { ...names, made: true };
}

/** The controller's address and the CA that verifies it. */
interface Controller {
  url: string;
  ca: string;
}

/** A raw request: the path goes on the wire exactly as written (fetch would normalize `..`). */
function rawGet(
  controller: Controller,
  path: string,
  token: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  const u = new URL(controller.url);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: u.hostname,
        port: u.port,
        path,
        method: 'GET',
        ca: controller.ca,
        headers: { authorization: `Bearer ${token}`, ...headers },
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }),
        );
      },
    );
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: '', headers: res.headers });
    });
    req.on('error', reject);
    req.end();
  });
}

/** A WebSocket upgrade of /v1/shell; the status of the answer (101 when a socket opened). */
function shellUpgrade(controller: Controller, token: string, node: string): Promise<{ status: number; body: string }> {
  return rawGet(controller, `/v1/shell?node=${node}`, token, {
    connection: 'Upgrade',
    upgrade: 'websocket',
    'sec-websocket-version': '13',
    'sec-websocket-key': randomBytes(16).toString('base64'),
    'sec-websocket-protocol': 'rankd.shell.v1',
  });
}

t.test('roles, Unix users and job ownership hold on every path, and the audit log says so', async (t) => {
  const { controller, env } = await localCluster(t, ['solo']);
  const unix = unixUsers(t);
  if (!unix.made)
    t.comment(
      `not root: no Unix users can be created, so the uid of a user's ranks is not checked (alice runs as ${unix.alice})`,
    );

  const add = async (name: string, role: string, unixUser?: string): Promise<Created> => {
    const r = await runCli(
      ['user', 'add', name, '--role', role, ...(unixUser ? ['--unix-user', unixUser] : []), '--json'],
      env,
    );
    t.equal(r.code, 0, `user add ${name}: ${r.stderr}`);
    const created = JSON.parse(r.stdout) as Created;
    t.same(
      { name: created.name, role: created.role, unixUser: created.unixUser },
      { name, role, unixUser: unixUser ?? (role === 'user' ? name : null) },
    );
    t.match(created.token, /^rankd_[A-Za-z0-9_-]{43}$/, 'a token of 256 random bits');
    return created;
  };
  const alice = await add('alice', 'user', unix.alice);
  const bob = await add('bob', 'user', unix.bob);
  const reader = await add('rita', 'reader');
  const operator = await add('otto', 'operator');
  const as = (who: Created) => ({ ...controller.clientEnv, RANKD_TOKEN: who.token, RANKD_HOME: controller.dataDir });

  const listed = await runCli(['user', 'list', '--json'], env);
  t.same(
    (JSON.parse(listed.stdout) as { users: Array<{ name: string }> }).users.map((u) => u.name).sort(),
    ['admin', 'alice', 'bob', 'otto', 'rita'],
    'the bootstrap admin and the four users',
  );
  const denied = await runCli(['user', 'list'], as(alice));
  t.equal(denied.code, 77, 'a user cannot list users (exit 77)');
  t.match(denied.stderr, /RANKD_FORBIDDEN/);

  const forbidden = (r: { status: number; body: unknown }, what: string, why: RegExp) => {
    t.equal(r.status, 403, `${what}: 403`);
    t.equal((r.body as ErrorLike).code, 'RANKD_FORBIDDEN', `${what}: RANKD_FORBIDDEN`);
    t.match((r.body as ErrorLike).message, why, `${what}: the message says what and why`);
  };

  // submitting: a user as root or as another Unix user; a reader at all
  forbidden(
    await controller.api('/v1/jobs', { method: 'POST', token: alice.token, body: { command: ['true'], user: 'root' } }),
    'alice as root',
    /may not run jobs as root/,
  );
  forbidden(
    await controller.api('/v1/jobs', {
      method: 'POST',
      token: alice.token,
      body: { command: ['true'], user: unix.bob },
    }),
    'alice as bob',
    new RegExp(`may not run jobs as Unix user "${unix.bob}"`),
  );
  forbidden(
    await controller.api('/v1/jobs', { method: 'POST', token: reader.token, body: { command: ['true'] } }),
    'a reader submitting',
    /role reader\) may not submit a job: that needs the role admin or operator or user/,
  );

  // alice's own job runs as her Unix user (the user field defaults to it)
  const idJob = await controller.api<JobLike>('/v1/jobs', {
    method: 'POST',
    token: alice.token,
    body: { command: ['id', '-u'], cwd: '/tmp', placement: { ntasks: 1 } },
  });
  t.equal(idJob.status, 201, JSON.stringify(idJob.body));
  t.equal(idJob.body.owner, 'alice', 'the job records its owner');
  t.equal(idJob.body.user, unix.alice, "user defaults to the caller's Unix user");
  const ended = await waitUntil("alice's id job to end", 20_000, async () => {
    const v = await controller.api<JobLike>(`/v1/jobs/${idJob.body.id}`, { token: alice.token });
    return ['succeeded', 'failed'].includes(v.body.state) ? v.body : undefined;
  });
  t.equal(ended.state, 'succeeded', JSON.stringify(ended.ranks));
  const out = await controller.api<string>(`/v1/jobs/${idJob.body.id}/logs`, { token: alice.token });
  t.equal(
    String(out.body).trim(),
    execFileSync('id', ['-u', unix.alice], { encoding: 'utf8' }).trim(),
    `the rank ran as ${unix.alice}'s uid`,
  );

  // a live job of alice's: bob can neither see, cancel, signal, read nor follow it
  const sleeper = await controller.api<JobLike>('/v1/jobs', {
    method: 'POST',
    token: alice.token,
    body: { command: ['sleep', '60'], cwd: '/tmp', placement: { ntasks: 1 }, grace: 1 },
  });
  t.equal(sleeper.status, 201);
  const id = sleeper.body.id;
  forbidden(
    await controller.api(`/v1/jobs/${id}`, { token: bob.token }),
    "bob reading alice's job",
    new RegExp(`user "bob" \\(role user\\) may not read job ${id}: it belongs to "alice"`),
  );
  forbidden(
    await controller.api(`/v1/jobs/${id}/cancel`, { method: 'POST', token: bob.token }),
    'bob cancelling',
    /may not cancel job .* belongs to "alice"/,
  );
  forbidden(
    await controller.api(`/v1/jobs/${id}/signal`, { method: 'POST', token: bob.token, body: { signal: 'SIGUSR1' } }),
    'bob signalling',
    /may not signal job/,
  );
  forbidden(
    await controller.api(`/v1/jobs/${id}/logs`, { token: bob.token }),
    'bob reading logs',
    /may not read the logs of job/,
  );
  for (const q of ['follow=true', 'follow=true&format=sse', 'format=frames', 'format=ndjson&follow=true']) {
    const r = await rawGet(controller, `/v1/jobs/${id}/logs?${q}`, bob.token);
    t.equal(r.status, 403, `bob following with ${q}: 403`);
  }
  const bobsList = await controller.api<{ jobs: JobLike[] }>('/v1/jobs', { token: bob.token });
  t.same(bobsList.body.jobs, [], 'bob lists only his own jobs (none)');
  const readerSees = await controller.api<JobLike>(`/v1/jobs/${id}`, { token: reader.token });
  t.equal(readerSees.status, 200, 'a reader reads any job');
  forbidden(
    await controller.api(`/v1/jobs/${id}/cancel`, { method: 'POST', token: reader.token }),
    'a reader cancelling',
    /role reader\) may not cancel job/,
  );
  const signalled = await controller.api(`/v1/jobs/${id}/signal`, {
    method: 'POST',
    token: alice.token,
    body: { signal: 'SIGCONT' },
  });
  t.equal(signalled.status, 200, 'alice signals her own job');
  const cancelled = await controller.api<JobLike>(`/v1/jobs/${id}/cancel`, { method: 'POST', token: alice.token });
  t.equal(cancelled.status, 200, 'alice cancels her own job');

  // operator-only routes called by a user
  forbidden(
    await controller.api('/v1/exec', { method: 'POST', token: alice.token, body: { pattern: 'all', command: ['id'] } }),
    'alice exec',
    /may not exec a command on nodes: that needs the role admin or operator/,
  );
  forbidden(
    await controller.api('/v1/doctor', { method: 'POST', token: alice.token, body: { pattern: 'all' } }),
    'alice doctor',
    /may not run the doctor/,
  );
  forbidden(
    await controller.api('/v1/inventory', { token: reader.token }),
    'a reader reading the inventory',
    /may not read the inventory/,
  );
  const shell = await shellUpgrade(controller, alice.token, 'solo');
  t.equal(shell.status, 403, 'alice opening a shell: 403, no socket');
  t.match(JSON.parse(shell.body) as ErrorLike, { code: 'RANKD_FORBIDDEN', message: /may not open a shell/ });
  const opShell = await shellUpgrade(controller, operator.token, 'solo');
  t.equal(opShell.status, 101, 'an operator opens a shell');
  const opExec = await controller.api('/v1/exec', {
    method: 'POST',
    token: operator.token,
    body: { pattern: 'solo', command: ['true'] },
  });
  t.equal(opExec.status, 200, 'an operator runs exec');
  const openapi = await controller.api('/v1/openapi.json', { token: reader.token });
  t.equal(openapi.status, 200, 'a reader reads the API document');
  t.equal((await controller.api('/v1/openapi.json', { token: null })).status, 401, 'the API document needs a token');

  // path traversal in job ids and log paths: a clear 400, nothing read outside
  for (const path of [
    '/v1/jobs/..%2f..%2fetc/logs',
    '/v1/jobs/..%2f..%2f..%2fetc%2fpasswd',
    '/v1/jobs/../../etc/passwd',
    '/v1/jobs/%2e%2e/logs',
    '/v1/jobs/a%00b/logs',
    '/v1/jobs/..',
    `/v1/jobs/${id}/logs?rank=../../etc/passwd`,
    `/v1/jobs/${id}/logs?stream=../../etc/passwd`,
  ]) {
    const r = await rawGet(controller, path, controller.apiToken);
    t.ok(r.status === 400 || r.status === 404, `${path}: ${r.status}`);
    t.notMatch(r.body, /root:.*:0:0:/, `${path}: nothing of /etc/passwd`);
    t.match(JSON.parse(r.body) as ErrorLike, { code: /^RANKD_(INVALID_REQUEST|NOT_FOUND)$/ }, `${path}: a stable code`);
  }

  // a revoked token fails at once
  const extra = await runCli(['token', 'create', '--json'], as(bob));
  t.equal(extra.code, 0, extra.stderr);
  const second = JSON.parse(extra.stdout) as { token: string; accessor: string };
  t.equal((await controller.api('/v1/whoami', { token: second.token })).status, 200);
  const tokens = await runCli(['token', 'list', '--json'], as(bob));
  t.same(
    (JSON.parse(tokens.stdout) as { tokens: Array<{ accessor: string; user: string }> }).tokens.map((x) => x.user),
    ['bob', 'bob'],
    'bob lists his own tokens',
  );
  t.notMatch(tokens.stdout, second.token, 'never the secret');
  forbidden(
    await controller.api('/v1/tokens', { method: 'POST', token: bob.token, body: { user: 'alice' } }),
    'bob minting a token for alice',
    /may not create a token for "alice"/,
  );
  const revoke = await runCli(['token', 'revoke', second.accessor], as(bob));
  t.equal(revoke.code, 0, revoke.stderr);
  t.equal(
    (await controller.api('/v1/whoami', { token: second.token })).status,
    401,
    'the revoked token is refused on the next request',
  );
  t.equal((await controller.api('/v1/whoami', { token: bob.token })).status, 200, "bob's other token still works");
  const removed = await runCli(['user', 'remove', 'rita'], env);
  t.equal(removed.code, 0, removed.stderr);
  t.equal(
    (await controller.api('/v1/nodes', { token: reader.token })).status,
    401,
    "a removed user's token fails at once",
  );

  // the audit log has each of these
  forbidden(
    await controller.api('/v1/audit', { token: alice.token }),
    'a user reading the audit log',
    /may not read the audit log/,
  );
  const audit = await runCli(['audit', '--json'], env);
  t.equal(audit.code, 0, audit.stderr);
  const { entries } = JSON.parse(audit.stdout) as { entries: AuditLike[] };
  const find = (what: string, pred: (e: AuditLike) => boolean) => {
    const e = entries.find(pred);
    t.ok(e, `audit: ${what}`);
    return e;
  };
  const asRoot = find(
    'alice submitting as root',
    (e) => e.user === 'alice' && e.route === '/v1/jobs' && e.status === 403 && e.resource['unixUser'] === 'root',
  );
  t.equal(asRoot?.decision, 'deny');
  t.match(asRoot?.reason, /may not run jobs as root/);
  t.same(asRoot?.argv, ['true'], 'with its argv');
  t.match(asRoot?.argvHash, /^sha256:[0-9a-f]{64}$/, 'and its hash');
  t.match(asRoot?.accessor, /^[0-9a-f]{16}$/, 'the principal is named by its token accessor');
  t.equal(asRoot?.source, '127.0.0.1');
  find('the reader submitting', (e) => e.user === 'rita' && e.route === '/v1/jobs' && e.status === 403);
  const submitted = find(
    "alice's accepted job",
    (e) => e.user === 'alice' && e.route === '/v1/jobs' && e.status === 201 && e.resource['job'] === id,
  );
  t.equal(submitted?.decision, 'allow');
  t.ok((submitted?.durationMs ?? -1) >= 0, 'with its duration');
  find(
    'bob cancelling',
    (e) => e.user === 'bob' && e.route === '/v1/jobs/:id/cancel' && e.status === 403 && e.resource['job'] === id,
  );
  find('bob signalling', (e) => e.user === 'bob' && e.route === '/v1/jobs/:id/signal' && e.status === 403);
  find('bob reading', (e) => e.user === 'bob' && e.method === 'GET' && e.route === '/v1/jobs/:id' && e.status === 403);
  find('bob following', (e) => e.user === 'bob' && e.route === '/v1/jobs/:id/logs' && e.status === 403);
  find(
    'alice cancelling her own',
    (e) => e.user === 'alice' && e.route === '/v1/jobs/:id/cancel' && e.status === 200 && e.decision === 'allow',
  );
  find(
    'alice exec refused',
    (e) => e.user === 'alice' && e.route === '/v1/exec' && e.status === 403 && e.argv?.[0] === 'id',
  );
  find(
    'alice shell refused',
    (e) => e.user === 'alice' && e.route === '/v1/shell' && e.status === 403 && e.resource['node'] === 'solo',
  );
  find("the operator's shell session", (e) => e.user === 'otto' && e.route === '/v1/shell' && e.decision === 'allow');
  find(
    "the operator's exec",
    (e) => e.user === 'otto' && e.route === '/v1/exec' && e.status === 200 && e.argv?.[0] === 'true',
  );
  const revoked = find(
    'the revocation',
    (e) => e.user === 'bob' && e.route === '/v1/tokens/:accessor' && e.status === 204,
  );
  t.equal(revoked?.resource['accessor'], second.accessor);
  // 401s are counted per source and minute: the entry names each route it counted
  find(
    'the revoked token refused',
    (e) =>
      e.user === null &&
      e.status === 401 &&
      (e.route === '/v1/whoami' || (e.resource['routes'] ?? '').split(' ').includes('/v1/whoami')),
  );
  find(
    'the user added',
    (e) => e.user === 'admin' && e.route === '/v1/users' && e.status === 201 && e.resource['user'] === 'alice',
  );
  t.notMatch(audit.stdout, alice.token, 'no secret in the audit log');
  t.notMatch(audit.stdout, second.token, 'not even a revoked one');

  const file = execFileSync('cat', [`${controller.dataDir}/audit.jsonl`], { encoding: 'utf8' });
  const lines = file
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as AuditLike);
  t.ok(
    lines.some((e) => e.user === 'bob' && e.route === '/v1/jobs/:id/cancel' && e.status === 403),
    'the JSON-lines file has the entries too',
  );
  t.notMatch(file, alice.token, 'and no secret');
  const since = await runCli(['audit', '--since', new Date(Date.now() + 60_000).toISOString(), '--json'], env);
  t.same(JSON.parse(since.stdout), { entries: [] }, '--since filters');
});
