// The site's default CPUs per rank (issue 25, item 5) on real runs: a controller with the
// default `share` and one with `--default-cpus-per-rank 1`, one real agent. Each rank reads
// the CPUs it is bound to from /proc/self/status (Cpus_allowed_list); the run header and
// `rankd plan` say which rule applied and what the job holds; under `1`, a second -n 1 job
// starts beside the first, where under `share` it has to wait.
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { formatCpuList, parseCpuList } from '@rankd/protocol';
import {
  runCli,
  startAgent,
  startController,
  waitForNode,
  waitUntil,
  type ControllerHandle,
} from '../helpers/daemons.js';

/** Cores (not threads) among the CPUs this process may run on: what the agent, its child, may bind. */
function coresHere(): number {
  const allowed = parseCpuList(/^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]!);
  const cores = new Set<string>();
  for (const cpu of allowed) {
    const topo = `/sys/devices/system/cpu/cpu${cpu}/topology`;
    cores.add(
      `${readFileSync(`${topo}/physical_package_id`, 'utf8').trim()}/${readFileSync(`${topo}/core_id`, 'utf8').trim()}`,
    );
  }
  return cores.size;
}
const C = coresHere();
const cores = (n: number) => `${n} core${n === 1 ? '' : 's'}`;

interface JobLike {
  id: string;
  state: string;
  rankMap: { ranks: Array<{ cpus: number[] }>; cpuPolicy?: unknown } | null;
}

async function cluster(t: Test, extra: string[]): Promise<ControllerHandle> {
  const ctl = await startController({ extra });
  t.teardown(() => ctl.stop());
  const agent = startAgent(ctl, { name: 'vm' });
  t.teardown(() => agent.stop());
  await waitForNode(ctl, 'vm', 'ready');
  return ctl;
}

/** `rankd run` of a rank that prints its CPU list: the list, the header's hold line, and the job. */
async function boundRun(ctl: ControllerHandle, flags: string[]) {
  const r = await runCli(
    ['run', ...flags, '-n', '1', '--', 'grep', 'Cpus_allowed_list', '/proc/self/status'],
    ctl.clientEnv,
  );
  const id = /^rankd: job (\S+)$/m.exec(r.stderr)?.[1];
  const job = id ? (await ctl.api<JobLike>(`/v1/jobs/${id}`)).body : undefined;
  const list = /Cpus_allowed_list:\s*(\S+)/.exec(r.stdout)?.[1];
  return {
    ...r,
    id,
    job,
    bound: list === undefined ? undefined : parseCpuList(list),
    hold: r.stderr.split('\n').find((l) => / holds /.test(l)),
  };
}

async function sleeper(ctl: ControllerHandle): Promise<JobLike> {
  const s = await ctl.api<JobLike>('/v1/jobs', {
    method: 'POST',
    body: { command: ['sleep', '30'], cwd: '/tmp', placement: { ntasks: 1 } },
  });
  return waitUntil('the sleeper to run', 15_000, async () => {
    const v = (await ctl.api<JobLike>(`/v1/jobs/${s.body.id}`)).body;
    return v.state === 'running' ? v : undefined;
  });
}

t.test('share (the default, as `rankd up` runs it): -n 1 is bound to, and holds, every core of its node', async (t) => {
  const ctl = await cluster(t, []);
  const r = await boundRun(ctl, []);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.bound?.length, C, `the rank is bound to one CPU per core of the node: ${r.stdout}`);
  t.same(r.bound, r.job?.rankMap?.ranks[0]?.cpus, 'exactly the CPUs of its rank map');
  t.same(
    r.job?.rankMap?.cpuPolicy,
    { site: 'share', applied: 'share', cpusPerRank: null },
    'the job view says which rule applied',
  );
  t.equal(
    r.hold,
    `rankd: job ${r.id} holds ${C} of ${cores(C)} on vm (${C > 1 ? 'share: -c 1 to ask for fewer' : 'share'})`,
  );

  const plan = await runCli(['plan', '-n', '1'], ctl.clientEnv);
  t.equal(plan.code, 0, plan.stderr);
  t.match(
    plan.stderr,
    `rankd: it would hold ${C} of ${cores(C)} on vm (${C > 1 ? 'share: -c 1 to ask for fewer' : 'share'})\n`,
    'rankd plan says it too',
  );

  const s = await sleeper(ctl);
  t.teardown(() => ctl.api(`/v1/jobs/${s.id}/cancel`, { method: 'POST' }));
  const second = await runCli(['run', '--immediate', '-n', '1', '--', 'true'], ctl.clientEnv);
  t.equal(second.code, 65, 'a second -n 1 job cannot start beside the first: the first holds the node');
  t.match(second.stderr, /cannot start now: needs 1 node with \d+ free cores?; 0 have room now/);
});

t.test('--default-cpus-per-rank 1: -n 1 is bound to one core, and a second job starts beside it', async (t) => {
  const ctl = await cluster(t, ['--default-cpus-per-rank', '1']);
  const r = await boundRun(ctl, []);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.bound?.length, 1, `the rank is bound to one CPU: ${r.stdout}`);
  t.same(r.bound, r.job?.rankMap?.ranks[0]?.cpus, 'exactly the CPU of its rank map');
  t.same(r.job?.rankMap?.cpuPolicy, { site: 1, applied: 'site', cpusPerRank: 1 });
  t.equal(
    r.hold,
    `rankd: job ${r.id} holds 1 of ${cores(C)} on vm (site default 1 per rank${C > 1 ? `: up to -c ${C} for more` : ''})`,
  );

  const plan = await runCli(['plan', '-n', '1', '--format', 'json'], ctl.clientEnv);
  t.equal(plan.code, 0, plan.stderr);
  const answer = JSON.parse(plan.stdout) as { cpuPolicy: unknown; nodes: Array<{ cores: unknown }> };
  t.same(answer.cpuPolicy, { site: 1, applied: 'site', cpusPerRank: 1 }, 'the plan answer says which rule applied');
  t.same(answer.nodes[0]!.cores, { held: 1, of: C });
  t.match(plan.stderr, `rankd: it would hold 1 of ${cores(C)} on vm (site default 1 per rank`);

  if (C < 2) {
    t.comment(`this machine has ${C} core: the second job and -c 2 need two`);
    return;
  }
  const s = await sleeper(ctl);
  t.teardown(() => ctl.api(`/v1/jobs/${s.id}/cancel`, { method: 'POST' }));
  const beside = await boundRun(ctl, ['--immediate']);
  t.equal(beside.code, 0, `a second -n 1 job starts at once beside the first: ${beside.stderr}`);
  t.equal(beside.bound?.length, 1);
  t.notOk(
    s.rankMap!.ranks[0]!.cpus.includes(beside.bound![0]!),
    `on another core than the first (${formatCpuList(s.rankMap!.ranks[0]!.cpus)} vs ${formatCpuList(beside.bound!)})`,
  );

  await ctl.api(`/v1/jobs/${s.id}/cancel`, { method: 'POST' });
  await waitUntil(
    'the sleeper to end',
    15_000,
    async () => (await ctl.api<JobLike>(`/v1/jobs/${s.id}`)).body.state !== 'running',
  );
  const asked = await boundRun(ctl, ['-c', '2']);
  t.equal(asked.code, 0, asked.stderr);
  t.equal(asked.bound?.length, 2, '-c wins over the site default');
  t.equal(asked.hold, `rankd: job ${asked.id} holds 2 of ${cores(C)} on vm (-c 2 per rank)`);
});

t.test('a queued job keeps the default it was admitted under across a controller restart with another', async (t) => {
  if (C < 2) {
    t.comment(`this machine has ${C} core: the test needs a held core beside a free one`);
    return;
  }
  const ctl = await cluster(t, ['--default-cpus-per-rank', '1']);
  const hog = await ctl.api<JobLike>('/v1/jobs', {
    method: 'POST',
    body: { command: ['sleep', '30'], cwd: '/tmp', placement: { ntasks: 1, cpusPerRank: C } },
  });
  await waitUntil(
    'the hog to run',
    15_000,
    async () => (await ctl.api<JobLike>(`/v1/jobs/${hog.body.id}`)).body.state === 'running',
  );
  const queued = await ctl.api<JobLike>('/v1/jobs', {
    method: 'POST',
    body: { command: ['true'], cwd: '/tmp', placement: { ntasks: 1 } },
  });
  t.equal(queued.body.state, 'queued', 'a -n 1 job waits for a core');

  const port = Number(new URL(ctl.url).port);
  await ctl.stop();
  const again = await startController({ dataDir: ctl.dataDir, port });
  t.teardown(() => again.stop());
  await waitForNode(again, 'vm', 'ready');
  await again.api(`/v1/jobs/${hog.body.id}/cancel`, { method: 'POST' });
  const done = await waitUntil('the queued job to end', 30_000, async () => {
    const v = (await again.api<JobLike>(`/v1/jobs/${queued.body.id}`)).body;
    return ['succeeded', 'failed', 'cancelled'].includes(v.state) ? v : undefined;
  });
  t.equal(done.state, 'succeeded', 'it starts under the restarted controller (default share)');
  t.same(
    done.rankMap?.cpuPolicy,
    { site: 1, applied: 'site', cpusPerRank: 1 },
    'planned under the default it was admitted with',
  );
  t.equal(done.rankMap?.ranks[0]?.cpus.length, 1, 'one core, as planned');
});

t.test('a bad --default-cpus-per-rank exits 64 and names the flag', async (t) => {
  for (const bad of ['0', 'all', '1.5', '-2']) {
    const r = await runCli([
      'controller',
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      t.testdir() + '/d',
      '--default-cpus-per-rank',
      bad,
    ]);
    t.equal(r.code, 64, bad);
    t.equal(
      r.stderr,
      `rankd: --default-cpus-per-rank: "${bad}" is neither share nor a number of cores from 1 to 65536\n`,
    );
  }
});
