// One doctor finding: a check id, a node (or none for the fleet as a whole), a status,
// what was found, and one line that fixes it.
import type { CheckStatus, DoctorCheck } from '@rankd/protocol';

export const pass = (node: string | null, check: string, message: string): DoctorCheck => ({
  node,
  check,
  status: 'PASS',
  message,
  fix: null,
});
export const warn = (node: string | null, check: string, message: string, fix: string): DoctorCheck => ({
  node,
  check,
  status: 'WARN',
  message,
  fix,
});
export const fail = (node: string | null, check: string, message: string, fix: string): DoctorCheck => ({
  node,
  check,
  status: 'FAIL',
  message,
  fix,
});

const RANK: Record<CheckStatus, number> = { PASS: 0, WARN: 1, FAIL: 2 };

export function worst(statuses: readonly CheckStatus[]): CheckStatus {
  return statuses.reduce<CheckStatus>((a, b) => (RANK[b] > RANK[a] ? b : a), 'PASS');
}

export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${Number.isInteger(v) ? v : v.toFixed(1)} ${units[i]}`;
}
