// rankd ping: a round trip to each agent with its latency; hosts without an agent and
// agents that went away are named as unreachable, and the exit status says so.
import t from 'tap';
import { fleetUnderTest } from './helpers.js';

interface PingReportLike {
  hosts: Array<{
    host: string;
    node: string | null;
    status: string;
    latencyMs: number | null;
    error: { code: string; message: string } | null;
  }>;
  summary: { success: number; failed: number; unreachable: number };
}

t.test('ping reports each agent with its latency and names the unreachable ones', async (t) => {
  const f = await fleetUnderTest(t, ['p1', 'p2', 'p3']);
  const all = await f.cli(['ping']);
  t.equal(all.code, 0, all.stderr);
  for (const name of ['p1', 'p2', 'p3'])
    t.match(all.stdout, new RegExp(`^${name} \\| SUCCESS \\| pong in [\\d.]+ ms$`, 'm'));

  t.equal((await f.importInventory('hosts.ini', '[rack]\np[1:3]\nghost\n')).code, 0);
  await f.agents.get('p3')!.stop();
  const r = await f.cli(['ping', 'rack', '--json']);
  t.equal(r.code, 4, 'unreachable hosts make the exit status 4, as in ansible');
  const report = JSON.parse(r.stdout) as PingReportLike;
  t.same(
    report.hosts.map((h) => [h.host, h.status]),
    [
      ['p1', 'SUCCESS'],
      ['p2', 'SUCCESS'],
      ['p3', 'UNREACHABLE'],
      ['ghost', 'UNREACHABLE'],
    ],
  );
  for (const h of report.hosts.filter((h) => h.status === 'SUCCESS'))
    t.ok(h.latencyMs !== null && h.latencyMs > 0, `${h.host}: ${h.latencyMs} ms`);
  t.equal(report.hosts[2]!.error?.code, 'RANKD_AGENT_UNREACHABLE');
  t.match(report.hosts[2]!.error?.message, /not connected/);
  t.same(report.hosts[3]!.error, { code: 'RANKD_NO_AGENT', message: 'no agent has registered for this host' });
  t.same(report.summary, { success: 2, failed: 0, unreachable: 2 });

  const text = await f.cli(['ping', 'rack']);
  t.match(text.stdout, /^ghost \| UNREACHABLE \| no agent has registered for this host$/m);
  const unknown = await f.cli(['ping', 'nosuch']);
  t.equal(unknown.code, 65);
  t.match(unknown.stderr, /"nosuch" matches no group, host or node/);
});
