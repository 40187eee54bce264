// Machine memory, huge pages and the memlock limit.
//
// The memlock limit is what RDMA needs: registering memory pins it, and a rank whose
// RLIMIT_MEMLOCK is small fails in ibv_create_cq/ibv_reg_mr with "Cannot allocate
// memory" (shared/seeds/003). The agent reports its own soft/hard limits and what its
// ranks will get: the agent raises its own limit before it starts ranks (ranks/memlock.ts),
// to unlimited when it holds CAP_SYS_RESOURCE, else its soft limit up to the hard one.
import type { HugePages, MemlockFacts, MemoryFacts } from '@rankd/protocol';
import { FactsWarningCode, type Sysfs } from './sysfs.js';

const HUGE = '/sys/kernel/mm/hugepages';

export function readHugePages(sys: Sysfs): HugePages[] {
  const dirs = sys.entries(HUGE, { optional: true }) ?? [];
  return dirs
    .map((d) => /^hugepages-(\d+)kB$/.exec(d))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b)
    .map((sizeKb) => ({
      sizeKb,
      total: sys.int(`${HUGE}/hugepages-${sizeKb}kB/nr_hugepages`) ?? 0,
      free: sys.int(`${HUGE}/hugepages-${sizeKb}kB/free_hugepages`) ?? 0,
    }));
}

export function readMemory(sys: Sysfs, hugepages: HugePages[]): MemoryFacts {
  const meminfo = sys.text('/proc/meminfo');
  const field = (name: string): number | null => {
    const m = meminfo === null ? null : new RegExp(`^${name}:\\s*(\\d+)`, 'm').exec(meminfo);
    return m ? Number(m[1]) : null;
  };
  const totalKb = field('MemTotal');
  if (meminfo !== null && totalKb === null) sys.warn(FactsWarningCode.Garbled, 'no MemTotal line', '/proc/meminfo');
  return { totalKb, availableKb: field('MemAvailable'), hugepages, memlock: readMemlock(sys) };
}

const CAP_SYS_RESOURCE = 24n;

/** CAP_SYS_RESOURCE in the effective set (/proc/self/status CapEff): root alone is not enough. */
function mayRaiseHardLimit(sys: Sysfs): boolean {
  const status = sys.text('/proc/self/status', { optional: true });
  const capEff = status ? /^CapEff:\s*([0-9a-f]+)/m.exec(status)?.[1] : undefined;
  return capEff !== undefined && ((BigInt('0x' + capEff) >> CAP_SYS_RESOURCE) & 1n) === 1n;
}

function readMemlock(sys: Sysfs): MemlockFacts {
  const limits = sys.text('/proc/self/limits');
  const line = limits?.split('\n').find((l) => l.startsWith('Max locked memory'));
  if (!line) {
    if (limits !== null) sys.warn(FactsWarningCode.Garbled, 'no "Max locked memory" line', '/proc/self/limits');
    return { agentSoft: null, agentHard: null, ranks: null };
  }
  const [soft, hard] = line.slice('Max locked memory'.length).trim().split(/\s+/);
  const parse = (v: string | undefined): number | null | undefined =>
    v === 'unlimited' ? null : v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
  const agentSoft = parse(soft);
  const agentHard = parse(hard);
  if (agentSoft === undefined || agentHard === undefined) {
    sys.warn(FactsWarningCode.Garbled, `unreadable memlock limits "${line}"`, '/proc/self/limits');
    return { agentSoft: null, agentHard: null, ranks: null };
  }
  // null means unlimited here
  return { agentSoft, agentHard, ranks: mayRaiseHardLimit(sys) ? null : agentHard };
}
