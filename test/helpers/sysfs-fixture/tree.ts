// Writing files, directories and relative symlinks under a fixture root, plus the
// kernel's two set syntaxes (cpulist and cpumask) so that generated trees read exactly
// like captured ones.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

export class Tree {
  constructor(readonly root: string) {}

  path(p: string): string {
    return join(this.root, p);
  }

  dir(p: string): void {
    mkdirSync(this.path(p), { recursive: true });
  }

  /** Writes a sysfs-style attribute: the value followed by one newline. */
  attr(p: string, value: string | number): void {
    this.raw(p, `${value}\n`);
  }

  raw(p: string, content: string): void {
    const full = this.path(p);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
  }

  /** A symlink at `from` pointing to `to`, written relative as the kernel's links are. */
  link(from: string, to: string): void {
    const full = this.path(from);
    mkdirSync(dirname(full), { recursive: true });
    symlinkSync(relative(dirname(full), this.path(to)), full);
  }
}

/** [0,1,2,3,8] → "0-3,8", as the kernel's *_list files print it. Written apart from @rankd/protocol's formatCpuList on purpose: fixtures must not share the code under test. */
export function cpuList(cpus: readonly number[]): string {
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

/**
 * The kernel's bitmap print for a set of width `nbits` (nr_cpu_ids): 32-bit words, most
 * significant first, the first one only as wide as the remaining bits need.
 */
export function cpuMask(cpus: readonly number[], nbits: number): string {
  const words = Math.max(1, Math.ceil(nbits / 32));
  const parts: string[] = [];
  for (let w = words - 1; w >= 0; w--) {
    let word = 0;
    for (const c of cpus) if (c >= w * 32 && c < (w + 1) * 32) word |= 1 << (c - w * 32);
    const bitsHere = w === words - 1 && nbits % 32 !== 0 ? nbits % 32 : 32;
    parts.push((word >>> 0).toString(16).padStart(Math.ceil(bitsHere / 4), '0'));
  }
  return parts.join(',');
}

/** "b8599f0300d4e0a2" → "b859:9f03:00d4:e0a2", the colon form of node_guid. */
export function guidWithColons(hex16: string): string {
  return hex16.match(/.{4}/g)!.join(':');
}
