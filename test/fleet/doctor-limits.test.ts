// rankd doctor says how each agent runs and what its node may use: an ephemeral agent
// (config "ephemeral": true, as `rankd agent --ephemeral` sets it) inside a Slurm job's
// cgroup that allows CPU 1 of 0-3 and 3 GiB, with a 64 KiB memlock hard limit it cannot
// raise, beside a root service agent on a whole machine. Real controller and agents, each
// reading a generated machine.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildSysfs, type MachineSpec } from '../helpers/sysfs-fixture.js';
import { ipv4Gid } from '../helpers/machines.js';
import { fleetUnderTest } from './helpers.js';

interface CheckLike {
  node: string | null;
  check: string;
  status: 'PASS' | 'WARN' | 'FAIL';
  message: string;
  fix: string | null;
}

const GiB = 2 ** 30;

function machine(host: number, restricted: boolean): MachineSpec {
  const job = '/slurm/uid_1000/job_7/step_extern';
  return {
    packages: 1,
    coresPerPackage: 4,
    threadsPerCore: 1,
    host: { hostname: `n${host}` },
    memlock: restricted ? { soft: 65536, hard: 65536 } : { soft: 'unlimited', hard: 'unlimited' },
    cgroup: restricted
      ? { version: 1, path: job, cpus: '1', mems: '0', memory: { '/slurm/uid_1000/job_7': { max: 3 * GiB } } }
      : { version: 2, path: '/' },
    nics: [{ name: 'ens1', pci: '0000:3b:00.0', numaNode: 0, speedMbps: 100000 }],
    rdma: [
      {
        name: 'mlx5_0',
        pci: '0000:3b:00.0',
        nodeGuid: `0c42a1030000${host.toString(16).padStart(2, '0')}00`,
        ports: [{ linkLayer: 'Ethernet', gids: [{ gid: ipv4Gid(`10.0.0.${host}`), type: 'RoCE v2', netdev: 'ens1' }] }],
      },
    ],
  };
}

t.test('an ephemeral agent in a Slurm cgroup: its mode, cpuset, memory limit and memlock', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rankd-doctor-limits-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ephemeralConfig = join(dir, 'ephemeral.json');
  writeFileSync(ephemeralConfig, JSON.stringify({ ephemeral: true }));
  const f = await fleetUnderTest(t, [
    { name: 'job1', root: buildSysfs(join(dir, 'job1'), machine(1, true)), extra: ['--config', ephemeralConfig] },
    { name: 'svc1', root: buildSysfs(join(dir, 'svc1'), machine(2, false)) },
  ]);
  t.equal((await f.importInventory('hosts.ini', '[lab]\njob1\nsvc1\n')).code, 0);
  const r = await f.cli(['doctor', 'lab', '--json']);
  const checks = (JSON.parse(r.stdout) as { checks: CheckLike[] }).checks;
  const one = (node: string, check: string) => {
    const found = checks.filter((c) => c.node === node && c.check === check);
    t.equal(found.length, 1, `one ${check} check for ${node}`);
    return found[0];
  };
  const me = userInfo();

  t.match(one('job1', 'agent.mode'), {
    status: 'PASS',
    message: `ephemeral: runs as ${me.username} (uid ${me.uid}), ranks run as ${me.username} only; no user switching`,
  });
  t.match(one('svc1', 'agent.mode'), {
    status: 'PASS',
    message: me.uid === 0 ? "service: root; ranks run as the job's user" : /^service: runs as .* not root/,
  });

  t.match(one('job1', 'limits.cpuset'), {
    status: 'PASS',
    message:
      "the cgroup's cpuset allows CPU 1 (1 core, memory node 0) of CPUs 0-3: 4 cores, 4 threads " +
      '(cgroup1:/slurm/uid_1000/job_7/step_extern): ranks are placed only there',
  });
  t.match(one('svc1', 'limits.cpuset'), {
    status: 'PASS',
    message: 'every CPU of the machine is allowed (CPUs 0-3: 4 cores, 4 threads) (cgroup2:/)',
  });

  t.match(one('job1', 'limits.memory'), {
    status: 'PASS',
    message: /^the cgroup limits the agent and its ranks together to 3 GiB of the machine's 16 GiB \(cgroup1:\/slurm\//,
  });
  t.match(one('svc1', 'limits.memory'), { status: 'PASS', message: 'no cgroup memory limit (cgroup2:/)' });

  // the ephemeral node's memlock is a warning that says who can fix it, in place of the service's FAIL
  t.match(one('job1', 'limits.memlock'), {
    status: 'WARN',
    message:
      /runs unprivileged as .* cannot raise its memlock hard limit of 64 KiB: ranks get 64 KiB, and RDMA needs unlimited/,
    fix: /PropagateResourceLimitsExcept=MEMLOCK.*IPC_LOCK/,
  });
  t.equal(checks.filter((c) => c.node === 'job1' && c.check === 'memlock').length, 0, 'no service memlock check');
  t.match(one('svc1', 'memlock'), { status: 'PASS', message: /unlimited/ });
  t.equal(checks.filter((c) => c.node === 'svc1' && c.check === 'limits.memlock').length, 0);

  t.equal(r.code, 0, 'warnings only: exit 0');
  const text = await f.cli(['doctor', 'lab']);
  t.match(text.stdout, /ephemeral: runs as/, 'the text view shows the mode');
});
