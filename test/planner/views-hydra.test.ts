// `--format impi` run for real: MPICH's mpiexec.hydra (the hydra Intel MPI's derives from)
// starts every rank on this machine with `-launcher fork`, the machinefile's node names
// standing for hosts. Each rank writes down its environment, which must be what the plan
// says: its node and local rank where the plan puts it, its mask and oneCCL worker slice
// picked by hydra's local rank id, every variable passed with the plan's value, and none
// of the per-rank ones hydra cannot set. MPICH ignores I_MPI_PIN_DOMAIN, so the pinning
// itself is not exercised: the masks are checked against the plan instead.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { parseCpuList, type RankMap } from '@rankd/protocol';
import { planRankMap } from '@rankd/planner';
import { renderRankMap, shellQuote } from '@rankd/planner/views';
import { IMPI_COMMAND_PLACEHOLDER } from '#planner/views/impi';
import { seed001CloudVm, seed002NoHt } from '../helpers/machines.js';
import { uniform } from './cluster.js';
import { domainOf, pinDomainCpus, readHydraLine } from './hydra-line.js';

const hydra = (() => {
  try {
    execFileSync('mpiexec.hydra', ['-info'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
const skip = hydra ? false : 'mpiexec.hydra is not installed (Debian: mpich)';

const dir = t.testdir();
const clx = uniform(`${dir}/clx`, seed002NoHt, 2, 'clx', '10.3.0');

/** Runs the view's command under hydra; the environment of each rank, by PMI_RANK. */
function launch(name: string, map: RankMap): Map<number, Record<string, string>> {
  const work = join(dir, name);
  const out = join(work, 'out');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(work, 'machinefile'), renderRankMap(map, 'machinefile'));
  const probe = join(work, 'probe.sh');
  writeFileSync(probe, `env -0 > ${shellQuote(out)}/"$PMI_RANK"\n`);
  const script = renderRankMap(map, 'impi')
    .replace(/^mpiexec\.hydra /m, 'mpiexec.hydra -launcher fork ')
    .replaceAll(IMPI_COMMAND_PLACEHOLDER, `/bin/sh ${shellQuote(probe)}`);
  // nothing inherited: what the ranks see comes from the command
  execFileSync('/bin/sh', ['-c', script], {
    cwd: work,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
    timeout: 120_000,
    stdio: 'pipe',
  });
  const ranks = new Map<number, Record<string, string>>();
  for (const file of readdirSync(out)) {
    const vars = readFileSync(join(out, file), 'utf8').split('\0').filter(Boolean);
    ranks.set(
      Number(file),
      Object.fromEntries(vars.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])),
    );
  }
  return ranks;
}

/** Each launched rank against the plan's rank of the same number. */
function checkRanks(t: Test, map: RankMap, launched: Map<number, Record<string, string>>): void {
  t.equal(launched.size, map.worldSize, 'every rank ran');
  const line = readHydraLine(renderRankMap(map, 'impi'));
  for (const planned of map.ranks) {
    const env = launched.get(planned.rank)!;
    const at = `rank ${planned.rank}`;
    // MPICH hands each rank its host's name from the machinefile
    t.equal(env['MPIR_CVAR_CH3_INTERFACE_HOSTNAME'], planned.node, `${at} runs on its node`);
    t.equal(Number(env['MPI_LOCALRANKID']), planned.localRank, `${at} has its local rank`);
    const local = planned.localRank;
    t.same(pinDomainCpus(env['I_MPI_PIN_DOMAIN']!)[local], domainOf(planned), `${at}: mask ${local} is its domain`);
    t.equal(env['CCL_PROCESS_LAUNCHER'], 'hydra');
    // oneCCL (hydra launcher) takes the MPI_LOCALRANKID-th slice of the node's worker list
    const count = Number(env['CCL_WORKER_COUNT'] ?? 0);
    const workers = parseCpuList(env['CCL_WORKER_AFFINITY'] ?? '');
    t.same(workers.slice(local * count, (local + 1) * count), planned.commCpus, `${at}: its oneCCL worker slice`);
    const passed = new Set([...Object.keys(line.genv), ...line.sets.flatMap((s) => Object.keys(s.env))]);
    for (const [k, v] of Object.entries(planned.env)) {
      if (passed.has(k) && k !== 'CCL_PROCESS_LAUNCHER') t.equal(env[k], v, `${at}: ${k}`);
    }
    for (const k of ['RANK', 'LOCAL_RANK', 'NODE_RANK', 'CCL_LOCAL_RANK'])
      t.notOk(k in env, `${at}: no ${k}, which would be wrong for some rank`);
  }
}

t.test("seed 002's machine, 2 nodes: one -genv'd mask list", { skip }, async (t) => {
  const map = planRankMap(clx, { ranksPerNode: 2, cpusPerRank: 24, commWorkers: 4 });
  checkRanks(t, map, launch('seed002', map));
});

t.test('--distribution cyclic: -ppn 1 deals the ranks as the plan does', { skip }, async (t) => {
  const map = planRankMap(clx, { ranksPerNode: 2, commWorkers: 4, distribution: 'cyclic' });
  t.same(
    map.nodes.map((n) => n.ranks),
    [
      [0, 2],
      [1, 3],
    ],
  );
  checkRanks(t, map, launch('cyclic', map));
});

t.test('unlike nodes: argument sets land on their nodes through the machinefile', { skip }, async (t) => {
  const vm = uniform(`${dir}/vm`, seed001CloudVm, 1, 'vm', '10.5.0');
  const map = planRankMap([...clx, ...vm], { ranksPerNode: 'numa', commWorkers: 1 });
  t.same(
    map.nodes.map((n) => [n.name, n.ranks.length]),
    [
      ['clx1', 2],
      ['clx2', 2],
      ['vm1', 1],
    ],
  );
  const launched = launch('unlike', map);
  checkRanks(t, map, launched);
  // each kind of node got its own OpenMP thread count from its argument set: a worker
  // takes one of 28 cores on clx, a sibling thread beside 48 cores on the VM
  t.same([...launched.values()].map((e) => e['OMP_NUM_THREADS']).sort(), ['27', '27', '27', '27', '48']);
});
