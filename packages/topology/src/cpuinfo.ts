// The CPU identity from the first processor of /proc/cpuinfo.
//
// Only the first 2 KiB are read: on x86 every entry makes the kernel sample that CPU's
// frequency, so reading the whole file costs milliseconds on large machines.
import type { Sysfs } from './sysfs.js';

export interface CpuIdentity {
  vendor: string | null;
  family: number | null;
  model: number | null;
  /** The human name: "model name" (x86, ARM with it), "cpu" (POWER), "Processor" (old ARM). */
  modelName: string | null;
  /** Number of "processor" entries seen in the part that was read. */
  processorsSeen: number;
}

export function readCpuIdentity(sys: Sysfs): CpuIdentity {
  const text = sys.raw('/proc/cpuinfo', { optional: true, maxBytes: 2048 }) ?? '';
  const id: CpuIdentity = { vendor: null, family: null, model: null, modelName: null, processorsSeen: 0 };
  let inFirst = true;
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) {
      if (line.trim() === '' && id.processorsSeen > 0) inFirst = false;
      continue;
    }
    const key = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (key === 'processor') {
      id.processorsSeen++;
      continue;
    }
    if (!inFirst && id.modelName !== null) continue;
    switch (key) {
      case 'vendor_id':
      case 'vendor':
        id.vendor ??= value || null;
        break;
      case 'cpu family':
      case 'family':
        id.family ??= /^\d+$/.test(value) ? Number(value) : null;
        break;
      case 'model':
        id.model ??= /^\d+$/.test(value) ? Number(value) : null;
        break;
      case 'model name':
      case 'Processor':
      case 'cpu':
      case 'cpu model':
        id.modelName ??= value || null;
        break;
    }
  }
  return id;
}

/** AMD Bulldozer-family compute units: hwloc counts each thread as its own core there. */
export function isAmdWithComputeUnits(id: CpuIdentity): boolean {
  return id.vendor === 'AuthenticAMD' && (id.family === 21 || id.family === 22);
}
