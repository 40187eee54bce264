// What the figures were measured on. A ratio travels between machines; an absolute
// millisecond figure means nothing without the CPU, core count and kernel beside it.
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface Machine {
  cpuModel: string;
  /** Logical CPUs this process may run on. */
  cpus: number;
  memoryGiB: number;
  kernel: string;
  os: string;
  node: string;
  /** What of the environment was changed for the run, and what it cost (environment.ts). */
  environment?: string[];
}

export function describeMachine(): Machine {
  return {
    cpuModel: cpuModel(),
    cpus: os.availableParallelism(),
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    kernel: `${os.type()} ${os.release()} ${os.machine()}`,
    os: osName(),
    node: process.version,
  };
}

function cpuModel(): string {
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const m = /^model name\s*:\s*(.+)$/m.exec(info) ?? /^Hardware\s*:\s*(.+)$/m.exec(info);
    if (m?.[1]) return m[1].trim();
  } catch {
    // not Linux, or /proc hidden
  }
  return os.cpus()[0]?.model ?? 'unknown';
}

function osName(): string {
  try {
    const release = readFileSync('/etc/os-release', 'utf8');
    const m = /^PRETTY_NAME="?([^"\n]+)"?$/m.exec(release);
    if (m?.[1]) return m[1];
  } catch {
    // no os-release
  }
  return `${os.type()} ${os.release()}`;
}

export function formatMachine(m: Machine): string {
  return `${m.cpuModel}, ${m.cpus} CPUs, ${m.memoryGiB} GiB, ${m.os}, ${m.kernel}, Node ${m.node}`;
}
