// Text renderings of facts: a compact summary, and the outputs of the tools people
// already trust (ibv_devices, ibv_devinfo, numactl -H, lscpu -p), byte for byte for
// everything those tools take from sysfs.
import type { Facts } from '@rankd/protocol';
import { renderIbvDevices } from './ibv-devices.js';
import { renderIbvDevinfo } from './ibv-devinfo.js';
import { renderLscpu } from './lscpu.js';
import { renderNumactl } from './numactl.js';
import { renderSummary } from './summary.js';

export const FACTS_FORMATS = ['summary', 'ibv_devices', 'ibv_devinfo', 'numactl', 'lscpu'] as const;
export type FactsFormat = (typeof FACTS_FORMATS)[number];

const RENDERERS: Record<FactsFormat, (facts: Facts) => string> = {
  summary: renderSummary,
  ibv_devices: renderIbvDevices,
  ibv_devinfo: renderIbvDevinfo,
  numactl: renderNumactl,
  lscpu: renderLscpu,
};

export function renderFacts(facts: Facts, format: FactsFormat): string {
  return RENDERERS[format](facts);
}

/** What a tool says instead of its output, on stderr, and the status it exits with. */
export interface ToolFailure {
  stderr: string;
  exitCode: number;
}

/**
 * ibv_devices and ibv_devinfo on a machine without RDMA devices, as rdma-core's tools
 * behave: without kernel verbs libibverbs gives no device list (ENOSYS), and both say so
 * with perror; with verbs but no device, ibv_devinfo says "No IB devices found" and exits
 * 255 (its `return -1`), while ibv_devices prints its header alone.
 */
export function toolFailure(facts: Facts, format: FactsFormat): ToolFailure | null {
  if (facts.rdma.devices.length > 0 || (format !== 'ibv_devices' && format !== 'ibv_devinfo')) return null;
  if (facts.rdma.verbsAbi === null) {
    return {
      stderr: 'Failed to get IB devices list: Function not implemented\n',
      exitCode: format === 'ibv_devinfo' ? 255 : 1,
    };
  }
  return format === 'ibv_devinfo' ? { stderr: 'No IB devices found\n', exitCode: 255 } : null;
}
