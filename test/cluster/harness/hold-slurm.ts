// A process that starts the Slurm rig with a running allocation, prints what it made, and
// waits to be killed: slurm-harness.test.ts SIGKILLs it (no teardown at all runs) and checks
// that the next run ends what it left. Not a test file (tap runs *.test.ts only).
import { launchSlurm } from './slurm.js';
import { waitFor } from './wait.js';

// tap, run on the whole folder, would start this too: without its flag it does nothing
if (process.argv[2] !== '--hold') {
  process.stdout.write('hold-slurm: a helper of slurm-harness.test.ts, not a test (run with --hold)\n');
  process.exit(0);
}
const slurm = await launchSlurm({ hosts: 2 });
const alloc = slurm.startSalloc(
  ['--nodes=2', '--ntasks-per-node=1', '--cpus-per-task=1'],
  'srun --overlap --ntasks-per-node=1 --cpu-bind=none sleep 300\n',
);
await alloc.jobId;
const tasks = await waitFor('both sleep tasks', 30_000, () => {
  const sleeps = slurm.stepProcesses().filter((p) => p.comm === 'sleep');
  return sleeps.length === 2 ? sleeps : undefined;
});
process.stdout.write(
  JSON.stringify({
    runDir: slurm.runDir,
    netns: [slurm.login, ...slurm.nodes.map((n) => n.host)].map((h) => h.netns),
    cgroups: slurm.cgroups.dirs(),
    steps: slurm.stepProcesses().map((p) => p.pid),
    tasks: tasks.map((p) => p.pid),
    clients: slurm.cgroups.clientPids(),
  }) + '\n',
);
setInterval(() => {}, 1 << 30);
