// Who may run a fabric check, against a real controller and two real agents on this machine
// (their probes run over loopback): a user and a reader are refused with 403, audited as a
// deny, and nothing is measured or stored; no token is 401; an operator may. Bad bodies are
// 400s that name the field, an unknown check is 404, and a second check over nodes a first
// one is measuring is 409 RANKD_CHECK_BUSY.
import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { runCli, waitUntil } from '../helpers/daemons.js';
import { localCluster } from '../helpers/cluster.js';

interface ErrorLike {
  code: string;
  message: string;
}
interface AuditLike {
  user: string | null;
  method: string;
  route: string;
  decision: string;
  reason: string;
  status: number | null;
  resource: Record<string, string>;
}
interface NetCheckLike {
  id: string;
  by: string | null;
  rounds: number;
  links: Array<{ src: string; dst: string; bandwidthBps: number | null; error: string | null }>;
  nodes: Array<{ node: string; verdict: string }>;
}

/** Live iperf3 processes whose parent is one of `pids` (the agents). */
function probesOf(pids: readonly number[]): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (fields[0] !== 'Z' && comm === 'iperf3' && pids.includes(Number(fields[1]))) out.push(Number(entry));
    } catch {
      // gone while we looked
    }
  }
  return out;
}

t.test('only operators and admins run checks; refusals are audited and run nothing', async (t) => {
  const { controller, agents, env } = await localCluster(t, ['ck1', 'ck2']);
  const agentPids = agents.map((a) => a.pid);
  const add = async (name: string, role: string, extra: string[] = []) => {
    const r = await runCli(['user', 'add', name, '--role', role, ...extra, '--json'], env);
    t.equal(r.code, 0, `user add ${name}: ${r.stderr}`);
    return (JSON.parse(r.stdout) as { token: string }).token;
  };
  const user = await add('uma', 'user', ['--unix-user', 'nobody']);
  const reader = await add('rudi', 'reader');
  const operator = await add('olga', 'operator');
  const body = { pattern: 'ck1,ck2', duration: 1 };

  const seen: number[] = [];
  const watch = setInterval(() => seen.push(...probesOf(agentPids)), 20);
  t.teardown(() => clearInterval(watch));
  for (const [who, token] of [
    ['uma', user],
    ['rudi', reader],
  ] as const) {
    const r = await controller.api<ErrorLike>('/v1/checks/net', { method: 'POST', token, body });
    t.equal(r.status, 403, `${who}: 403`);
    t.equal(r.body.code, 'RANKD_FORBIDDEN');
    t.match(r.body.message, /may not run a fabric check: that needs the role admin or operator/, `${who}: says why`);
  }
  const unauthenticated = await controller.api<ErrorLike>('/v1/checks/net', { method: 'POST', token: null, body });
  t.equal(unauthenticated.status, 401, 'no token: 401');
  // a second look after the probes' own second would have passed
  await new Promise((r) => setTimeout(r, 1500));
  clearInterval(watch);
  t.same(seen, [], 'no probe program ran on either agent');
  const stored = await controller.api<{ checks: unknown[] }>('/v1/checks');
  t.same(stored.body, { checks: [] }, 'no check is stored');
  const nodes = await controller.api<{ nodes: Array<{ name: string; drain: unknown }> }>('/v1/nodes');
  t.ok(
    nodes.body.nodes.every((n) => n.drain === null || n.drain === undefined),
    'no node is drained',
  );

  const audit = await runCli(['audit', '--json'], env);
  t.equal(audit.code, 0, audit.stderr);
  const { entries } = JSON.parse(audit.stdout) as { entries: AuditLike[] };
  for (const who of ['uma', 'rudi']) {
    const e = entries.find((x) => x.user === who && x.route === '/v1/checks/net');
    t.ok(e, `the audit log has ${who}'s attempt`);
    t.same([e?.method, e?.status, e?.decision], ['POST', 403, 'deny'], `${who}: a deny`);
    t.match(e?.reason, /may not run a fabric check/);
  }

  // the operator may, and the check is stored under the operator's name
  const ran = await controller.api<NetCheckLike>('/v1/checks/net', { method: 'POST', token: operator, body });
  t.equal(ran.status, 200, JSON.stringify(ran.body));
  t.equal(ran.body.by, 'olga', 'the check names who ran it');
  t.equal(ran.body.rounds, 1, 'two nodes: one round');
  t.same(ran.body.links.map((l) => `${l.src}→${l.dst}`).sort(), ['ck1→ck2', 'ck2→ck1'], 'both directions');
  t.ok(
    ran.body.links.every((l) => l.error === null && (l.bandwidthBps ?? 0) > 0),
    `both directions measured: ${JSON.stringify(ran.body.links)}`,
  );
  const got = await controller.api<NetCheckLike>(`/v1/checks/${ran.body.id}`, { token: reader });
  t.equal(got.status, 200, 'a reader may read a stored check');
  t.equal(got.body.id, ran.body.id);
  const allowed = (
    JSON.parse((await runCli(['audit', '--json'], env)).stdout) as { entries: AuditLike[] }
  ).entries.find((x) => x.user === 'olga' && x.route === '/v1/checks/net');
  t.same([allowed?.status, allowed?.decision, allowed?.resource['check']], [200, 'allow', ran.body.id], 'audited');
  t.same(probesOf(agentPids), [], 'nothing of the check is left running');
});

t.test('bad bodies are 400s naming the field; an unknown check is 404', async (t) => {
  const { controller } = await localCluster(t, ['bad1']);
  const cases: Array<[string, unknown, RegExp]> = [
    ['duration 0', { duration: 0 }, /body\/duration must be >= 1/],
    ['duration 61', { duration: 61 }, /body\/duration must be <= 60/],
    ['threshold 2', { threshold: 2 }, /body\/threshold must be <= 1/],
    ['rail "a b"', { rail: 'a b' }, /body\/rail must match pattern/],
    ['rail "-x"', { rail: '-x' }, /body\/rail must match pattern/],
    ['an extra field', { pattern: 'all', command: ['id'] }, /body\/command .*must not have additional properties/],
    ['drain as a string', { drain: 'yes' }, /body\/drain must be boolean/],
  ];
  for (const [what, body, field] of cases) {
    const r = await controller.api<ErrorLike>('/v1/checks/net', { method: 'POST', body });
    t.equal(r.status, 400, `${what}: 400`);
    t.equal(r.body.code, 'RANKD_INVALID_REQUEST', `${what}: RANKD_INVALID_REQUEST`);
    t.match(r.body.message, field, `${what}: names the field (${r.body.message})`);
  }
  t.same((await controller.api('/v1/checks')).body, { checks: [] }, 'nothing was run or stored');

  const unknown = await controller.api<ErrorLike>('/v1/checks/c-nope-000000');
  t.equal(unknown.status, 404);
  t.same(unknown.body.code, 'RANKD_CHECK_NOT_FOUND');
  t.match(unknown.body.message, /no check c-nope-000000/);
  const odd = await controller.api<ErrorLike>('/v1/checks/..%2Fx');
  t.equal(odd.status, 400, 'an id that is not an id: 400');
});

t.test('a check over nodes another check is measuring is 409 RANKD_CHECK_BUSY', async (t) => {
  const { controller, agents, env } = await localCluster(t, ['bz1', 'bz2']);
  const agentPids = agents.map((a) => a.pid);
  const first = controller.api<NetCheckLike>('/v1/checks/net', {
    method: 'POST',
    body: { pattern: 'bz1,bz2', duration: 4 },
  });
  // the first check is measuring once its probe program runs on an agent
  await waitUntil('the first check to start its probe', 8000, () => probesOf(agentPids).length > 0);
  const second = await controller.api<ErrorLike>('/v1/checks/net', {
    method: 'POST',
    body: { pattern: 'bz2', duration: 1 },
  });
  t.equal(second.status, 409);
  t.equal(second.body.code, 'RANKD_CHECK_BUSY');
  t.match(second.body.message, /a check is already measuring bz2/);
  const { entries } = JSON.parse((await runCli(['audit', '--json'], env)).stdout) as { entries: AuditLike[] };
  t.ok(
    entries.some((e) => e.route === '/v1/checks/net' && e.status === 409),
    'the busy refusal is in the audit log',
  );
  const done = await first;
  t.equal(done.status, 200, 'the first check completes');
  t.ok(
    done.body.links.every((l) => l.error === null),
    `undisturbed: ${JSON.stringify(done.body.links)}`,
  );
  const stored = await controller.api<{ checks: Array<{ id: string }> }>('/v1/checks');
  t.same(
    stored.body.checks.map((c) => c.id),
    [done.body.id],
    'only the first check is stored',
  );
  const again = await controller.api<NetCheckLike>('/v1/checks/net', {
    method: 'POST',
    body: { pattern: 'bz2', duration: 1 },
  });
  t.equal(again.status, 200, 'once the first has ended, the nodes are free again');
});
