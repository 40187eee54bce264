// exec: an ad-hoc command across the fleet. Ansible's answer is `ansible all -m command`;
// here over 32 inventory aliases of this machine with the local connection, so no SSH
// cost is counted on its side (over SSH it would only be slower).
import path from 'node:path';
import type { BenchContext, FigureDescriptor, FigureReport } from '../lib/figure.js';
import { timeProcess } from '../lib/process-timing.js';
import { compareArms, comparisonRow } from '../lib/rows.js';
import { which } from '../lib/which.js';
import { ansibleCommandArgv, prepareAnsible } from '../peers/ansible.js';
import { rankdExecArm } from '../rankd/exec.js';

export const EXEC_HOSTS = 32;
const ARM = {
  rankd: `rankd exec over ${EXEC_HOSTS} agents`,
  ansible: `ansible all -m command -a true (${EXEC_HOSTS} hosts)`,
} as const;
const TIMEOUT_MS = 300_000;

export const execFigure: FigureDescriptor = {
  name: 'exec',
  title: `ad-hoc exec over ${EXEC_HOSTS} hosts`,
  peers: ['ansible'],
  run,
};

async function run(ctx: BenchContext): Promise<FigureReport> {
  const setup = prepareAnsible(path.join(ctx.tmpDir, 'ansible-exec'), EXEC_HOSTS);
  const argv = ansibleCommandArgv(setup, 'true');
  ctx.log('exec: interleaved');
  const c = await compareArms(
    [
      await rankdExecArm(ctx, ARM.rankd),
      which('ansible')
        ? {
            name: ARM.ansible,
            sample: async () => {
              const r = await timeProcess(argv, { timeoutMs: TIMEOUT_MS, env: setup.env, captureStdout: true });
              // Every host must report rc=0, or the run measured a failure.
              const ok = (r.stdout.match(/\| CHANGED \| rc=0/g) ?? []).length;
              if (ok !== EXEC_HOSTS) throw new Error(`ansible reported rc=0 on ${ok} of ${EXEC_HOSTS} hosts`);
              return r.ms;
            },
          }
        : { name: ARM.ansible, unavailable: 'ansible is not installed (Debian package ansible-core)' },
    ],
    { rounds: ctx.rounds, unit: 'ms', log: ctx.log },
  );
  return {
    rows: [
      comparisonRow(
        c,
        `ad-hoc exec of \`true\` over ${EXEC_HOSTS} hosts`,
        ARM.rankd,
        { arm: ARM.ansible, label: ARM.ansible },
        [{ on: 'ratio', op: '<=', value: 0.1, text: '≤ 0.1× ansible' }],
      ),
    ],
    notes: [
      `Ansible: \`ansible bench -i inventory.ini -m command -a true --forks ${EXEC_HOSTS}\` (${EXEC_HOSTS} forks, its fastest setting; the default is 5) over ${EXEC_HOSTS} aliases of this machine with \`ansible_connection=local\` and a named interpreter, temp files in the run's directory. Every run must report rc=0 on all ${EXEC_HOSTS} hosts.`,
    ],
    limits: [
      'Ansible starts one Python controller, then per host forks a worker that builds the module payload, writes it to',
      'a temp dir and runs a fresh Python for it: dozens of Python starts on 2 cores, which is what bounds it.',
      'rankd will send one message per agent over connections that are already open and fork `true` on each,',
      'so its bound is the controller’s fan-out and the 32 forks.',
    ].join(' '),
    peersUsed: ['ansible'],
  };
}
