// The process's view: /proc/self/cgroup, /proc/mounts and the cpuset files they point to
// (cgroup v1 or v2), /proc/self/limits, and the host identity files.
import type { Layout } from './layout.js';
import type { MachineSpec } from './spec.js';
import { cpuList, type Tree } from './tree.js';

export function writeCgroup(tree: Tree, m: MachineSpec, l: Layout): void {
  const allCpus = cpuList(l.online);
  const allMems = l.nodeCount > 0 ? cpuList([...Array(l.nodeCount).keys()]) : '0';
  const spec = m.cgroup ?? { version: 2 as const, path: '/' };
  const path = spec.path ?? '/rankd.slice/job';
  const cpus = spec.cpus ?? allCpus;
  const mems = spec.mems ?? allMems;
  const sub = path === '/' ? '' : path;
  const mounts = [
    'sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0',
    'proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0',
    'tmpfs /run tmpfs rw,nosuid,nodev,size=3280404k,mode=755 0 0',
  ];
  if (spec.version === 2) {
    mounts.push('cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0');
    tree.raw('proc/self/cgroup', `0::${path}\n`);
    tree.attr('sys/fs/cgroup/cgroup.controllers', 'cpuset cpu io memory hugetlb pids rdma misc');
    // the root cgroup has only the effective files
    tree.attr('sys/fs/cgroup/cpuset.cpus.effective', allCpus);
    tree.attr('sys/fs/cgroup/cpuset.mems.effective', allMems);
    if (sub) {
      tree.attr(`sys/fs/cgroup${sub}/cpuset.cpus`, spec.cpus ?? '');
      tree.attr(`sys/fs/cgroup${sub}/cpuset.mems`, spec.mems ?? '');
      tree.attr(`sys/fs/cgroup${sub}/cpuset.cpus.effective`, cpus);
      tree.attr(`sys/fs/cgroup${sub}/cpuset.mems.effective`, mems);
    }
  } else {
    mounts.push(
      'tmpfs /sys/fs/cgroup tmpfs ro,nosuid,nodev,noexec,mode=755 0 0',
      'cgroup /sys/fs/cgroup/memory cgroup rw,nosuid,nodev,noexec,relatime,memory 0 0',
      'cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,nodev,noexec,relatime,cpuset 0 0',
    );
    const devices = spec.devices ? `5:devices:${path}\n` : '';
    tree.raw('proc/self/cgroup', `12:memory:${path}\n7:cpuset:${path}\n${devices}1:name=systemd:${path}\n`);
    if (spec.devices) {
      mounts.push('cgroup /sys/fs/cgroup/devices cgroup rw,nosuid,nodev,noexec,relatime,devices 0 0');
      tree.attr('sys/fs/cgroup/devices/devices.list', 'a *:* rwm');
      tree.raw(`sys/fs/cgroup/devices${sub}/devices.list`, spec.devices.map((l) => `${l}\n`).join(''));
    }
    tree.attr('sys/fs/cgroup/cpuset/cpuset.cpus', allCpus);
    tree.attr('sys/fs/cgroup/cpuset/cpuset.mems', allMems);
    tree.attr(`sys/fs/cgroup/cpuset${sub}/cpuset.cpus`, cpus);
    tree.attr(`sys/fs/cgroup/cpuset${sub}/cpuset.mems`, mems);
    tree.attr(`sys/fs/cgroup/cpuset${sub}/cpuset.effective_cpus`, cpus);
    tree.attr(`sys/fs/cgroup/cpuset${sub}/cpuset.effective_mems`, mems);
  }
  writeMemoryLimits(tree, spec.version, path, spec.memory ?? {});
  tree.raw('proc/mounts', mounts.join('\n') + '\n');
}

/** What a v1 memory.limit_in_bytes says for "no limit": PAGE_COUNTER_MAX pages of 4 KiB. */
const V1_UNLIMITED = '9223372036854771712';

function writeMemoryLimits(
  tree: Tree,
  version: 1 | 2,
  path: string,
  limits: Record<string, { max?: number | 'max'; high?: number | 'max' }>,
): void {
  const parts = path.split('/').filter(Boolean);
  const ancestry = ['/', ...parts.map((_, i) => '/' + parts.slice(0, i + 1).join('/'))];
  for (const p of ancestry) {
    const sub = p === '/' ? '' : p;
    const l = limits[p] ?? {};
    if (version === 1) {
      tree.attr(
        `sys/fs/cgroup/memory${sub}/memory.limit_in_bytes`,
        l.max === undefined || l.max === 'max' ? V1_UNLIMITED : String(l.max),
      );
    } else if (sub) {
      // the v2 root cgroup has no memory.max or memory.high
      tree.attr(`sys/fs/cgroup${sub}/memory.max`, String(l.max ?? 'max'));
      tree.attr(`sys/fs/cgroup${sub}/memory.high`, String(l.high ?? 'max'));
    }
  }
}

/** The layout of proc_pid_limits(): "%-25s %-20s %-20s %-10s\n". */
function limitsLine(name: string, soft: string, hard: string, unit: string): string {
  return `${name.padEnd(25)} ${soft.padEnd(20)} ${hard.padEnd(20)} ${unit.padEnd(10)}`;
}

export function writeLimits(tree: Tree, m: MachineSpec): void {
  const lock = m.memlock ?? { soft: 8388608, hard: 8388608 };
  const v = (x: number | 'unlimited') => String(x);
  tree.raw(
    'proc/self/limits',
    [
      limitsLine('Limit', 'Soft Limit', 'Hard Limit', 'Units'),
      limitsLine('Max cpu time', 'unlimited', 'unlimited', 'seconds'),
      limitsLine('Max open files', '1048576', '1048576', 'files'),
      limitsLine('Max locked memory', v(lock.soft), v(lock.hard), 'bytes'),
      limitsLine('Max address space', 'unlimited', 'unlimited', 'bytes'),
    ].join('\n') + '\n',
  );
  // a container's usual set lacks CAP_SYS_RESOURCE (bit 24); full root has it
  const capEff = m.capSysResource ? '000001ffffffffff' : '00000000a80425fb';
  tree.raw(
    'proc/self/status',
    `Name:\tnode\nCapInh:\t0000000000000000\nCapPrm:\t${capEff}\nCapEff:\t${capEff}\nMems_allowed_list:\t0\n`,
  );
}

export function writeHost(tree: Tree, m: MachineSpec): void {
  const h = m.host ?? {};
  tree.attr('proc/sys/kernel/hostname', h.hostname ?? 'node-a');
  tree.attr('proc/sys/kernel/osrelease', h.kernel ?? '6.8.0-49-generic');
  tree.raw(
    'etc/os-release',
    `PRETTY_NAME="${h.osPrettyName ?? 'Ubuntu 24.04.1 LTS'}"\nNAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\n`,
  );
  // hwloc's convention for captured trees: what uname would have said
  tree.raw(
    'proc/hwloc-nofile-info',
    `OSName: Linux\nOSRelease: ${h.kernel ?? '6.8.0-49-generic'}\nArchitecture: ${h.arch ?? 'x86_64'}\n`,
  );
  for (const f of m.files ?? []) tree.raw(f.replace(/^\/+/, ''), '');
}
