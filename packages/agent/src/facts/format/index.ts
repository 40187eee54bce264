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
