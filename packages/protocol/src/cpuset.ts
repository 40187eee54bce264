// CPU and node sets in the kernel's list syntax ("0-3,8,10-11") and mask syntax
// ("00000000,0000000f"). Sets are sorted, de-duplicated integer arrays everywhere
// in rankd; strings only exist at the edges (sysfs, numactl, env vars, views).

/** Parses a kernel cpulist. Throws on garbage so that callers can warn and mark unknown. */
export function parseCpuList(text: string): number[] {
  const s = text.replace(/\0/g, '').trim();
  if (s === '') return [];
  const out = new Set<number>();
  for (const part of s.split(',')) {
    const m = /^(\d+)(?:-(\d+)(?::(\d+)\/(\d+))?)?$/.exec(part.trim());
    if (!m) throw new Error(`bad cpulist element "${part}"`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo || hi - lo > 1 << 20) throw new Error(`bad cpulist range "${part}"`);
    // the kernel's "a-b:used/group" stride form
    const used = m[3] === undefined ? 1 : Number(m[3]);
    const group = m[4] === undefined ? 1 : Number(m[4]);
    if (group === 0 || used > group) throw new Error(`bad cpulist stride "${part}"`);
    for (let base = lo; base <= hi; base += group) {
      for (let i = base; i < base + used && i <= hi; i++) out.add(i);
    }
  }
  return [...out].sort((a, b) => a - b);
}

/** Parses a kernel cpumask ("ff,00000001", most significant word first). */
export function parseCpuMask(text: string): number[] {
  const s = text.replace(/\0/g, '').trim();
  if (s === '') return [];
  const words = s.split(',');
  const out: number[] = [];
  for (let w = 0; w < words.length; w++) {
    const word = words[words.length - 1 - w]!.replace(/^0x/i, '');
    if (!/^[0-9a-fA-F]{1,8}$/.test(word)) throw new Error(`bad cpumask word "${word}"`);
    const bits = parseInt(word, 16);
    for (let b = 0; b < 32; b++) if ((bits >>> b) & 1) out.push(w * 32 + b);
  }
  return out.sort((a, b) => a - b);
}

/** Formats a set compactly: [0,1,2,3,8] → "0-3,8". Input need not be sorted. */
export function formatCpuList(cpus: readonly number[]): string {
  const sorted = [...new Set(cpus)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(j === i ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

/** Formats a set as a hex mask, as taskset and I_MPI_PIN_DOMAIN take it: [0,1,4] → "0x13". */
export function formatCpuMask(cpus: readonly number[]): string {
  let mask = 0n;
  for (const c of cpus) mask |= 1n << BigInt(c);
  return '0x' + mask.toString(16);
}
