// A node's hardware in a few numbers, for listings (the fleet page, `GET /v1/nodes`).
import type { Facts, HardwareSummary } from '@rankd/protocol';

export function hardwareSummary(facts: Facts): HardwareSummary {
  const ports = facts.rdma.devices.flatMap((d) => d.ports);
  return {
    packages: facts.cpu.packages,
    numaNodes: facts.cpu.numaNodes ?? facts.numa.nodes.filter((n) => !n.cpuless).length,
    cores: facts.cpu.cores,
    pus: facts.cpu.pus,
    memoryBytes: facts.memory.totalKb === null ? null : facts.memory.totalKb * 1024,
    ...memoryLimit(facts),
    gpus: facts.gpus.length,
    gpusAllowed: facts.gpus.filter((g) => g.allowed !== false).length,
    nics: facts.nics.filter((n) => !n.virtual).length,
    rdmaPorts: ports.length,
    rdmaPortsActive: ports.filter((p) => p.state === 'ACTIVE').length,
    warnings: facts.warnings.length,
  };
}

function memoryLimit(facts: Facts): Pick<HardwareSummary, 'memoryLimitBytes'> {
  const kb = facts.memory.cgroupLimitKb;
  return kb === undefined ? {} : { memoryLimitBytes: kb === null ? null : kb * 1024 };
}
