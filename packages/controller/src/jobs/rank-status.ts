// A rank's end as the job sees it: terminal or not, its status as a shell reports it,
// and the sentence that says how it ended.
import { constants } from 'node:os';
import type { RankRecord } from './job-records.js';

export function isTerminal(r: RankRecord): boolean {
  return r.state === 'exited' || r.state === 'failed-to-start' || r.state === 'unknown';
}

/** A rank's status as a shell reports it: its code, or 128 + the signal number. */
export function exitStatus(r: RankRecord): number {
  if (r.state === 'exited' && r.exitCode !== null) return r.exitCode;
  // a rank that never ran: the status a shell gives the reason when the agent named one
  // (127: no such program, 126: not executable), and never success
  if (r.state === 'failed-to-start') return r.exitCode || 1;
  if (r.signal) return 128 + (signalNumber(r.signal) ?? 0);
  return r.state === 'exited' ? 0 : 1;
}

export function describeEnd(r: RankRecord): string {
  if (r.state === 'failed-to-start') return `rank ${r.rank} on ${r.node} failed to start: ${r.error}`;
  if (r.state === 'unknown') return r.error ?? `rank ${r.rank} on ${r.node}: status unknown`;
  if (r.signal) return `rank ${r.rank} on ${r.node} was killed by ${r.signal}`;
  return `rank ${r.rank} on ${r.node} exited with code ${r.exitCode}`;
}

function signalNumber(name: string): number | undefined {
  return (constants.signals as Record<string, number>)[name];
}
