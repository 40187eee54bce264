// CPU caches from /sys/devices/system/cpu/cpuN/cache/indexM.
//
// Each cache instance is read once, by the first CPU that shares it; the CPUs in its
// shared_cpu_map skip that index. Level and type are taken per index from the first
// CPU that has it: every kernel numbers the indexes the same way on all CPUs (L1d,
// L1i, L2, L3), hybrid parts included. Sizes are read once per index and sharing width:
// where hybrid parts differ in size (P-core vs E-core L1/L2) they differ in how many
// CPUs share the cache too.
import type { Cache } from '@rankd/protocol';
import type { Sysfs } from './sysfs.js';

const CPU = '/sys/devices/system/cpu';

export function readCaches(sys: Sysfs, pus: readonly number[]): Cache[] {
  const first = pus[0];
  if (first === undefined) return [];
  const indexes = (sys.entries(`${CPU}/cpu${first}/cache`, { optional: true }) ?? [])
    .filter((n) => /^index\d+$/.test(n))
    .map((n) => Number(n.slice(5)))
    .sort((a, b) => a - b);
  if (indexes.length === 0) return [];
  const kinds = new Map<number, { level: number; type: Cache['type'] } | null>();
  const covered = indexes.map(() => new Set<number>());
  const puSet = new Set(pus);
  // kernels either have cache ids for every instance or none: stop asking after a miss
  const noIds = new Set<number>();
  const sizes = new Map<string, number | null>();
  const caches: Cache[] = [];
  for (const cpu of pus) {
    indexes.forEach((index, k) => {
      if (covered[k]!.has(cpu)) return;
      const dir = `${CPU}/cpu${cpu}/cache/index${index}`;
      if (!kinds.has(index)) kinds.set(index, readKind(sys, dir));
      const kind = kinds.get(index);
      if (!kind) return;
      const shared = sys.mask(`${dir}/shared_cpu_map`, { optional: true }) ?? sys.list(`${dir}/shared_cpu_list`, { optional: true });
      if (shared === null) return; // this CPU lacks the index (some hybrid ARM parts)
      const cpus = shared.length > 0 ? shared : [cpu];
      for (const c of cpus) if (puSet.has(c)) covered[k]!.add(c);
      covered[k]!.add(cpu);
      const id = noIds.has(index) ? null : sys.int(`${dir}/id`, { optional: true });
      if (id === null) noIds.add(index);
      const sizeKey = `${index}/${cpus.length}`;
      if (!sizes.has(sizeKey)) sizes.set(sizeKey, sizeKb(sys.text(`${dir}/size`, { optional: true })));
      caches.push({ ...kind, id, sizeKb: sizes.get(sizeKey)!, cpus });
    });
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
