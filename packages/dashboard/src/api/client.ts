// The REST client: openapi-fetch over the types openapi-typescript generated from the
// controller's /v1/openapi.json (schema.d.ts). A route, parameter or field the API does not
// have is a type error here, so the API document is a contract the dashboard is built on.
import createClient, { type Middleware } from 'openapi-fetch';
import type { RouteAnswer } from '@rankd/protocol/routes';
import type { paths } from './schema';

// The answers' types are the route table's (@rankd/protocol/routes), the ones the controller
// serves and the CLI checks: types only, nothing of the table is in the bundle.
export type NodeView = RouteAnswer<'GET /v1/nodes'>['nodes'][number];
export type Facts = RouteAnswer<'GET /v1/nodes/:name/facts'>;
export type JobView = RouteAnswer<'GET /v1/jobs/:id'>;
export type JobSummary = RouteAnswer<'GET /v1/jobs'>['jobs'][number];
export type QueueEntry = RouteAnswer<'GET /v1/queue'>['jobs'][number];
export type RankEntry = NonNullable<JobView['rankMap']>['ranks'][number];
export type RankView = JobView['ranks'][number];
export type SessionView = RouteAnswer<'GET /v1/session'>;
export type DoctorResult = RouteAnswer<'POST /v1/doctor'>;
export type CheckResult = RouteAnswer<'GET /v1/checks/:id'>;
export type NetCheck = Extract<CheckResult, { kind: 'net' }>;
export type AllreduceCheck = Extract<CheckResult, { kind: 'allreduce' }>;

let csrf: string | null = null;

/** The session's CSRF token, sent on every state-changing request (the cookie alone is not enough). */
export function useSessionCsrf(token: string | null): void {
  csrf = token;
}

const withCsrf: Middleware = {
  onRequest({ request }) {
    if (csrf && request.method !== 'GET' && request.method !== 'HEAD') request.headers.set('x-rankd-csrf', csrf);
    return request;
  },
};

export const api = createClient<paths>({ baseUrl: location.origin, credentials: 'same-origin' });
api.use(withCsrf);

/** An error answer of the API: its status, stable code and message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The data of a call, or an ApiError carrying the controller's own message. */
export async function must<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok) return data as T;
  const body = (error ?? {}) as { code?: string; message?: string };
  throw new ApiError(response.status, body.code ?? `HTTP_${response.status}`, body.message ?? response.statusText);
}
