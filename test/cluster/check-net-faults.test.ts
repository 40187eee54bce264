// `rankd check net` when the fabric or a host misbehaves, on one cluster of four hosts:
// probe ports already taken, a host without iperf3, an iperf3 that hangs, and a host whose
// link is cut mid-check. Each check must finish, say what happened to whom, and leave no
// probe program running anywhere.
import t, { type Test } from 'tap';
import { statSync } from 'node:fs';
import { startCluster, type AgentLaunch, type Cluster } from './harness/cluster.js';
import {
  FIRST_PROBE_PORT,
  PORTS_PER_PROBE,
  hangingIperf3Dir,
  listensIn,
  probeProcesses,
  squatPorts,
  type PortSquatter,
} from './harness/fabric.js';
import { probesOf, type NetCheck } from './harness/net-check.js';
import { clusterTest } from './harness/requirements.js';
import { waitFor } from './harness/wait.js';

const IPERF3 = '/usr/bin/iperf3';
const CHECK = ['check', 'net', '--duration', '1', '--threshold', '0.3', '--json'];
/** PROBE_MARGIN_MS of checks/pair-probe.ts: a probe past --duration by this much is ended by its agent. */
const PROBE_MARGIN_MS = 4000;
/** REPLY_MARGIN_MS there: the controller gives up on a silent agent this much later. */
const REPLY_MARGIN_MS = 3000;

function failedLinks(result: NetCheck, among: readonly string[]): string[] {
  return result.links
    .filter((l) => l.error !== null && among.includes(l.src) && among.includes(l.dst))
    .map((l) => `${l.src}→${l.dst}: ${l.error}`);
}

/** Restarts a host's agent as `launch` says and waits until the controller has it ready again. */
async function relaunch(c: Cluster, name: string, launch: AgentLaunch): Promise<void> {
  await c.restartAgent(name, launch);
  await c.waitForNode(name, 'ready', 60_000);
}

async function portsInUse(t: Test, c: Cluster): Promise<void> {
  const names = c.net.hosts.map((h) => h.name);
  // the first seven ports of the first two windows, on every host: round 0's two probes
  // each get one of these windows, and only its last port is free
  const windows = [0, 1].map((w) => FIRST_PROBE_PORT + w * PORTS_PER_PROBE);
  const taken = windows.flatMap((first) => Array.from({ length: PORTS_PER_PROBE - 1 }, (_, i) => first + i));
  const free = windows.map((first) => first + PORTS_PER_PROBE - 1);
  const squatters: PortSquatter[] = [];
  try {
    for (const h of c.net.hosts) squatters.push(await squatPorts(h.netns, taken));
    const check = c.spawnRankd(CHECK);
    // watch each host for a probe server on a window's free port while the check runs
    const servedOn = new Set<number>();
    while (check.running()) {
      for (const s of squatters) for (const port of free) if (listensIn(s.process.pid, port)) servedOn.add(port);
      await new Promise((r) => setTimeout(r, 20));
    }
    const exit = await check.exited;
    t.ok(exit.code === 0 || exit.code === 1, `the check ran to its end (exit ${exit.code}); ${check.stderr()}`);
    const result = JSON.parse(check.stdout()) as NetCheck;
    t.same(failedLinks(result, names), [], 'no probe failed');
    t.equal(result.links.length, 12, 'both directions of all six pairs were measured');
    t.same([...servedOn].sort(), free, "each of round 0's probes served on its window's one free port");
    t.same(
      squatters.map((s) => s.accepted()),
      squatters.map(() => []),
      'no probe connected to a taken port',
    );
    t.ok(
      squatters.every((s) => s.process.running()),
      'the listeners that held the ports still run',
    );
  } finally {
    for (const s of squatters) await s.process.stop();
  }
  t.same(probeProcesses(c), [], 'no probe program is left running');
  t.same(c.leftovers(), [], 'nothing else is left in the namespaces');
}

async function noIperf3(t: Test, c: Cluster, missing: string): Promise<void> {
  const others = c.net.hosts.map((h) => h.name).filter((n) => n !== missing);
  await relaunch(c, missing, { hide: ['iperf3'] });
  const run = await c.rankd(CHECK);
  t.equal(run.code, 1, `exit 1: a node is flagged; stderr: ${run.stderr}`);
  const result = JSON.parse(run.stdout) as NetCheck;
  t.same(result.flagged, [missing], 'only the host without iperf3 is flagged');
  const row = result.nodes.find((n) => n.node === missing)!;
  t.equal(row.verdict, 'flagged', 'its verdict is flagged');
  t.match(row.reason ?? '', /iperf3 is not installed \(apt install iperf3\)/, 'its reason names the package');
  t.same(failedLinks(result, others), [], 'every pair of the other hosts was measured');
  t.ok(
    result.links.filter((l) => l.src !== missing && l.dst !== missing).every((l) => l.bandwidthBps !== null),
    'with a bandwidth both ways',
  );
  const text = await c.rankd(['check', 'net', '--last'], 30_000);
  t.match(
    text.stdout,
    new RegExp(`^${missing}: FLAGGED: .*iperf3 is not installed \\(apt install iperf3\\)`, 'm'),
    "the printed report gives the host's reason",
  );
  t.same(probeProcesses(c), [], 'no probe program is left running');
  t.same(c.leftovers(), [], 'nothing else is left in the namespaces');
  await relaunch(c, missing, {});
  t.ok(statSync(IPERF3).isFile(), `the machine's own ${IPERF3} is untouched`);
}

async function hangingProbe(t: Test, c: Cluster, hanging: string): Promise<void> {
  const others = c.net.hosts.map((h) => h.name).filter((n) => n !== hanging);
  await relaunch(c, hanging, { pathFirst: hangingIperf3Dir(t) });
  const run = await c.rankd(CHECK, 180_000);
  t.equal(run.code, 1, `exit 1: links are flagged; stderr: ${run.stderr}`);
  const result = JSON.parse(run.stdout) as NetCheck;
  t.equal(result.roundsRun, 3, 'all three rounds ran');
  const hung = result.links.filter((l) => l.src === hanging || l.dst === hanging);
  t.equal(hung.length, 6, `both directions of ${hanging}'s three pairs`);
  for (const l of hung) {
    t.ok(l.flagged, `${l.src}→${l.dst} is flagged`);
    t.match(l.why ?? '', /iperf3 to \S+ ran past 5000 ms and was ended/, `${l.src}→${l.dst}: ${l.why}`);
  }
  const ends = probesOf(result).probes.filter((x) => x.a === hanging || x.b === hanging);
  t.same(
    ends.map((p) => (p.a === hanging ? 'client' : 'server')).sort(),
    ['client', 'client', 'server'],
    'the fake hung as the client of two probes and as the server of one',
  );
  for (const p of ends) {
    // ended by its agent at --duration plus the margin: not before, and well before the
    // controller would give up on a silent agent
    const ms = p.endedAt - p.startedAt;
    const bound = 1000 + PROBE_MARGIN_MS;
    t.ok(ms >= bound && ms < bound + REPLY_MARGIN_MS, `${p.a}–${p.b} ended after ${ms} ms`);
  }
  t.same(failedLinks(result, others), [], 'the other pairs were measured');
  t.same(result.flagged, [hanging], 'the host all of whose probes hung is flagged');
  t.same(probeProcesses(c), [], 'no probe program, real or fake, is left running');
  t.same(c.leftovers(), [], 'nothing else is left in the namespaces');
  await relaunch(c, hanging, {});
}

async function cutMidCheck(t: Test, c: Cluster, cut: string): Promise<void> {
  const others = c.net.hosts.map((h) => h.name).filter((n) => n !== cut);
  const check = c.spawnRankd(CHECK);
  await waitFor('the first round to start a probe program', 60_000, () => {
    if (!check.running()) throw new Error(`the check ended before any probe: ${check.output()}`);
    return probeProcesses(c).length > 0;
  });
  c.cut(cut);
  let restored = false;
  t.teardown(() => {
    try {
      if (!restored) c.restore(cut);
    } catch {
      // the network is already gone
    }
  });
  const exit = await check.exited;
  t.equal(exit.code, 1, `exit 1; stderr: ${check.stderr()}`);
  const result = JSON.parse(check.stdout()) as NetCheck;
  const row = result.nodes.find((n) => n.node === cut)!;
  t.equal(row.verdict, 'unreachable', `its row reads unreachable: ${row.reason}`);
  t.same(result.flagged, [cut], 'it is flagged, and only it');
  t.equal(result.roundsRun, 3, 'the schedule ran to its end');
  t.same(failedLinks(result, others), [], 'no probe between the healthy hosts failed');
  t.equal(result.links.filter((l) => l.src !== cut && l.dst !== cut).length, 6, 'their three pairs were measured');

  const healthy = c.net.hosts.filter((h) => h.name !== cut).map((h) => h.netns);
  t.same(
    probeProcesses(c).filter((p) => healthy.includes(p.netns)),
    [],
    'no probe program runs on the healthy hosts once the check has returned',
  );
  // the cut-off agent hears nothing from the controller: its own deadlines end its probes
  t.notOk(c.net.linkUp(c.agent(cut).host), 'the link is still cut');
  await waitFor("the cut-off host's probe programs to end", 20_000, () => probeProcesses(c).length === 0);
  t.pass('the cut-off agent ended its probe programs while still cut off');
  c.restore(cut);
  restored = true;
  await c.waitForNode(cut, 'ready', 60_000);
  t.same(c.leftovers(), [], 'nothing is left in any namespace');
}

clusterTest(
  t,
  'check net: ports in use, no iperf3, a hanging probe, a host cut mid-check',
  { timeout: 420_000 },
  async (t) => {
    const c = await startCluster(t, { hosts: 4 });
    // first: the controller offers its first port window only to its first check
    await t.test('ports in use: the agent skips taken ports, and no probe fails', (t) => portsInUse(t, c));
    await t.test('a host without iperf3: its row says so, it is flagged, the others complete', (t) =>
      noIperf3(t, c, 'host4'),
    );
    // in the circle of four, host2 measures two of its pairs and serves one: the fake
    // iperf3 hangs as a client and as a server
    await t.test('a probe that hangs is ended at --duration plus the margin, and the check finishes', (t) =>
      hangingProbe(t, c, 'host2'),
    );
    await t.test('a host cut mid-check: unreachable, flagged, the rest measured, nothing left', (t) =>
      cutMidCheck(t, c, 'host4'),
    );
  },
);
