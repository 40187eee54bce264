// CPU caches from /sys/devices/system/cpu/cpuN/cache/indexM.
//
// Each cache instance is read once, by the first CPU that shares it; the CPUs in its
// shared_cpu_map skip that index. Every CPU folder is read, offline ones included (old
// kernels keep their caches), in CPU order and then index order, and a CPU's indexes end
// at its first missing one: the kernel numbers them from 0 without gaps, and lscpu stops
// there too, so a CPU whose index0 is missing contributes nothing. Level and type are
// taken per index from the first CPU that has it: every kernel numbers the indexes the
// same way on all CPUs (L1d, L1i, L2, L3), hybrid parts included. Sizes are read once per
// index and sharing width: where hybrid parts differ in size (P-core vs E-core L1/L2)
// they differ in how many CPUs share the cache too.
import type { Cache } from '@rankd/protocol';
import type { Sysfs } from './sysfs.js';

const CPU = '/sys/devices/system/cpu';

export function readCaches(sys: Sysfs, cpus: readonly number[]): Cache[] {
  const kinds = new Map<number, { level: number; type: Cache['type'] } | null>();
  // per index, the CPUs an instance already read holds
  const covered: Set<number>[] = [];
  // kernels either have cache ids for every instance or none: stop asking after a miss
  const noIds = new Set<number>();
  const sizes = new Map<string, number | null>();
  const caches: Cache[] = [];
  // indexes seen on some CPU so far; past them a stat, which fails without an exception,
  // finds a CPU's last index more cheaply than a failed open
  let seenIndexes = 0;
  for (const cpu of cpus) {
    for (let index = 0; ; index++) {
      if (covered[index]?.has(cpu)) continue;
      const dir = `${CPU}/cpu${cpu}/cache/index${index}`;
      if (index >= seenIndexes) {
        if (!sys.exists(dir)) break;
        seenIndexes = index + 1;
      }
      const mask = sys.mask(`${dir}/shared_cpu_map`, { optional: true });
      if (mask === null && !sys.exists(dir)) break;
      const shared = mask ?? sys.list(`${dir}/shared_cpu_list`, { optional: true });
      if (!kinds.has(index)) kinds.set(index, readKind(sys, dir));
      const kind = kinds.get(index);
      if (!kind || shared === null) continue;
      const seen = (covered[index] ??= new Set());
      for (const c of shared) seen.add(c);
      seen.add(cpu);
      const id = noIds.has(index) ? null : sys.int(`${dir}/id`, { optional: true });
      if (id === null) noIds.add(index);
      const sizeKey = `${index}/${shared.length}`;
      if (!sizes.has(sizeKey)) sizes.set(sizeKey, sizeKb(sys.text(`${dir}/size`, { optional: true })));
      // an empty map stays empty (old IA-64 kernels): lscpu then shows the cache on no CPU
      caches.push({ ...kind, id, sizeKb: sizes.get(sizeKey)!, cpus: shared });
    }
  }
  return caches;
}

function readKind(sys: Sysfs, dir: string): { level: number; type: Cache['type'] } | null {
  const level = sys.int(`${dir}/level`, { optional: true });
  if (level === null) return null;
  const t = sys.text(`${dir}/type`, { optional: true });
  const type = t === 'Data' || t === 'Instruction' || t === 'Unified' ? t : 'unknown';
  return { level, type };
}

/** "48K" → 48, "1M" → 1024, "1024" (bytes on some architectures) stays as read. */
function sizeKb(text: string | null): number | null {
  if (text === null) return null;
  const m = /^(\d+)\s*([KMG]?)/i.exec(text);
  if (!m) return null;
  const n = Number(m[1]);
  const unit = m[2]!.toUpperCase();
  return unit === 'M' ? n * 1024 : unit === 'G' ? n * 1024 * 1024 : n;
}
