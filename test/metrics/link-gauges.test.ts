// The link gauges of /metrics (rankd_link_bandwidth_bytes_per_second, rankd_link_latency_seconds)
// against a real controller and three real agents on this machine: a real `rankd check net`
// (iperf3 over loopback) fills them with exactly the stored check's measured directions; a
// second check, with one agent stopped, replaces them whole (its failed probes have no sample,
// and the links of the first check are gone); a restarted controller reads them back from its
// store; promtool finds nothing to say. Then the cap, over a simulated 512-node check.
import { spawnSync } from 'node:child_process';
import t, { type Test } from 'tap';
import { Registry } from 'prom-client';
import type { NetCheckResult } from '@rankd/protocol';
import { MAX_LINK_DIRECTIONS, registerLinkGauges } from '#controller/metrics/link-gauges';
import { runCli, startController, waitForNode, type ControllerHandle } from '../helpers/daemons.js';
import { localCluster } from '../helpers/cluster.js';

const BANDWIDTH = 'rankd_link_bandwidth_bytes_per_second';
const LATENCY = 'rankd_link_latency_seconds';

/** The series of one family, keyed `src>dst@rail`. */
function series(text: string, family: string): Map<string, number> {
  const out = new Map<string, number>();
  const re = new RegExp(`^${family}\\{src="([^"]*)",dst="([^"]*)",rail="([^"]*)"\\} (\\S+)$`, 'gm');
  for (const m of text.matchAll(re)) out.set(`${m[1]}>${m[2]}@${m[3]}`, Number(m[4]));
  return out;
}

function single(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

/** What the gauges should hold for a stored check: every direction that measured, and nothing else. */
function expected(result: NetCheckResult, pick: 'bandwidthBps' | 'latencyUs'): Map<string, number> {
  const out = new Map<string, number>();
  for (const l of result.links) {
    const v = l[pick];
    if (l.error === null && v !== null)
      out.set(`${l.src}>${l.dst}@${l.rail}`, pick === 'bandwidthBps' ? v / 8 : v / 1e6);
  }
  return out;
}

function sameValues(t: Test, got: Map<string, number>, want: Map<string, number>, what: string): void {
  t.same([...got.keys()].sort(), [...want.keys()].sort(), `${what}: the same directions`);
  for (const [k, v] of want) t.ok(Math.abs((got.get(k) ?? NaN) - v) <= Math.abs(v) * 1e-9, `${what} ${k} = ${v}`);
}

async function scrape(controller: ControllerHandle): Promise<string> {
  const r = await controller.api<string>('/metrics');
  if (r.status !== 200) throw new Error(`GET /metrics: ${r.status}`);
  return r.body;
}

async function checkNet(env: NodeJS.ProcessEnv, t: Test): Promise<NetCheckResult> {
  // exit 0 or 1: loopback links on a shared 2-core machine may well fall under 80 % of their median
  const run = await runCli(['check', 'net', '--duration', '1', '--json'], env, 120_000);
  t.ok(run.code === 0 || run.code === 1, `rankd check net ran (exit ${run.code}): ${run.stderr}`);
  return JSON.parse(run.stdout) as NetCheckResult;
}

t.test('the link gauges follow the last net check', async (t) => {
  const { controller, agents, env } = await localCluster(t, ['la', 'lb', 'lc'], { heartbeatMs: 200 });
  const before = await scrape(controller);
  t.equal(series(before, BANDWIDTH).size, 0, 'no link series before any check');
  t.equal(single(before, 'rankd_link_check_timestamp_seconds'), 0, 'and the check time is 0');

  const first = await checkNet(env, t);
  t.equal(first.links.length, 6, 'three nodes: six directions on the one tcp rail');
  t.ok(
    first.links.some((l) => l.bandwidthBps !== null && l.latencyUs !== null),
    'some direction measured both',
  );
  const one = await scrape(controller);
  sameValues(t, series(one, BANDWIDTH), expected(first, 'bandwidthBps'), 'bandwidth');
  sameValues(t, series(one, LATENCY), expected(first, 'latencyUs'), 'latency');
  t.equal(single(one, 'rankd_link_check_timestamp_seconds'), first.endedAt / 1000, "the check's end");
  t.equal(single(one, 'rankd_link_directions_omitted'), 0, 'nothing left out');

  // lc's agent stops: the next check cannot probe its links, and records them as failed
  await agents[2]!.stop();
  await waitForNode(controller, 'lc', 'unreachable', 30_000);
  const second = await checkNet(env, t);
  const failed = second.links.filter((l) => l.error !== null);
  t.equal(failed.length, 4, "lc's four directions failed");
  t.ok(
    failed.every((l) => l.src === 'lc' || l.dst === 'lc'),
    'only those',
  );
  const two = await scrape(controller);
  const bw = series(two, BANDWIDTH);
  sameValues(t, bw, expected(second, 'bandwidthBps'), 'bandwidth after the second check');
  sameValues(t, series(two, LATENCY), expected(second, 'latencyUs'), 'latency after the second check');
  t.same([...bw.keys()].sort(), ['la>lb@tcp', 'lb>la@tcp'], 'la↔lb only: the first check left nothing behind');
  t.equal(single(two, 'rankd_link_check_timestamp_seconds'), second.endedAt / 1000);

  const promtool = spawnSync('promtool', ['check', 'metrics'], { input: two, encoding: 'utf8', timeout: 30_000 });
  if (promtool.error && process.env['CI'] !== 'true') t.comment(`promtool not run: ${promtool.error.message}`);
  else {
    t.equal(promtool.status, 0, 'promtool check metrics exits 0');
    t.equal(promtool.stdout + promtool.stderr, '', 'and has nothing to say');
  }

  // a restarted controller reads the last stored check back
  await controller.stop();
  const again = await startController({ dataDir: controller.dataDir });
  t.teardown(() => again.stop());
  const three = await scrape(again);
  sameValues(t, series(three, BANDWIDTH), expected(second, 'bandwidthBps'), 'bandwidth after a restart');
  t.equal(single(three, 'rankd_link_check_timestamp_seconds'), second.endedAt / 1000);
});

/** A check as the analysis would store it: n nodes, one rail, every direction measured, one slow link. */
function simulated(n: number): NetCheckResult {
  const links: NetCheckResult['links'] = [];
  let k = 0;
  for (let i = 0; i < n; i++)
    for (let j = 0; j < n; j++) {
      if (i === j) continue;
      const slow = i === 7 && j === 300;
      // spread the healthy ones over 9.0–9.9 Gbit/s so that "the slowest" has a meaning
      const bps = slow ? 1e9 : 9e9 + (k++ % 10) * 1e8;
      links.push({
        rail: 'mlx5_0',
        src: `n${i}`,
        dst: `n${j}`,
        round: 0,
        startedAt: 0,
        endedAt: 1,
        bandwidthBps: bps,
        latencyUs: 2,
        error: null,
        flagged: slow,
        why: slow ? 'slow' : null,
      });
    }
  return {
    id: 'c-sim',
    kind: 'net',
    startedAt: 0,
    endedAt: 1_000,
    by: null,
    pattern: 'all',
    durationS: 1,
    threshold: 0.8,
    rounds: n - 1,
    roundsRun: n - 1,
    rails: [{ name: 'mlx5_0', kind: 'rdma', tools: [], medianBps: 9.5e9, thresholdBps: 7.6e9, medianLatencyUs: 2 }],
    nodes: [],
    links,
    flagged: [],
    drained: [],
    message: null,
  };
}

t.test('a 512-node check: at most MAX_LINK_DIRECTIONS directions, the flagged and slowest first', async (t) => {
  const registry = new Registry();
  const listeners: Array<(r: NetCheckResult) => void> = [];
  registerLinkGauges(registry, {
    onNetCheck: (l) => listeners.push(l),
    list: () => [],
    get: () => {
      throw new Error('nothing stored');
    },
  });
  const result = simulated(512);
  t.equal(result.links.length, 261_632, '512 × 511 directions');
  for (const l of listeners) l(result);
  const text = await registry.metrics();
  const bw = series(text, BANDWIDTH);
  t.equal(bw.size, MAX_LINK_DIRECTIONS, 'the cap');
  t.equal(series(text, LATENCY).size, MAX_LINK_DIRECTIONS, 'the same directions for latency');
  t.equal(single(text, 'rankd_link_directions_omitted'), 261_632 - MAX_LINK_DIRECTIONS, 'the rest is counted');
  t.equal(bw.get('n7>n300@mlx5_0'), 1e9 / 8, 'the flagged link is kept');
  const kept = [...bw.values()];
  t.ok(
    kept.every((v) => v <= 9e9 / 8),
    'the slowest healthy links (9.0 Gbit/s) fill the rest; the faster ones are left out',
  );
});
