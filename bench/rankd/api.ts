// The controller's REST API as the bench's own figures call it (plan, submit, job state),
// over loopback HTTPS verified against the fleet's CA, with the fleet's API token. Every
// call is bounded by a timeout.
import type { Fleet } from './fleet.js';
import { restJson } from './https.js';

const CALL_TIMEOUT_MS = 120_000;

export function api<T>(fleet: Fleet, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  return restJson<T>(fleet, method, path, body, CALL_TIMEOUT_MS);
}

export interface JobSummaryLite {
  id: string;
  state: string;
  reason: string;
}

/** A job's state from the list of recent jobs (its summary names its nodes), where GET /v1/jobs/:id carries every rank. */
export async function jobState(fleet: Fleet, id: string): Promise<JobSummaryLite | null> {
  const { jobs } = await api<{ jobs: JobSummaryLite[] }>(fleet, 'GET', '/v1/jobs?limit=20');
  return jobs.find((j) => j.id === id) ?? null;
}
