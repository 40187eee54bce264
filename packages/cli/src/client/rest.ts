// The CLI's REST client, typed by the route table (@rankd/protocol/routes): a call names its
// route by id (`GET /v1/jobs/:id`), and its params, query and body are type-checked against
// that route's schemas. Its answer is checked at run time against the route's response
// schema for the status it came with; one that does not match is RANKD_RESPONSE_INVALID,
// never a value of the wrong shape passed on.
//
// The table itself (TypeBox schemas) is never loaded here: a route id carries its method and
// path, and each route's checks are compiled ahead of time (scripts/cli-response-checks.mjs)
// into a module of plain code that is imported only when that route is called.
import type { IncomingMessage } from 'node:http';
import { fillPath, parseRouteId, routeFileName } from '@rankd/protocol/route-id';
import type { RouteAnswer, RouteBody, RouteParams, RouteQuery, RouteSpec, ServedRouteId } from '@rankd/protocol/routes';
import { ErrorCode } from '@rankd/protocol/errors';
import { RANKD_VERSION } from '@rankd/protocol/version';
import { CliError, ExitCode } from '../exit-codes.js';
import type { ClientConfig } from './config.js';
import { exchange, send, type RequestOptions } from './http.js';

/** A field the route requires, may take (all of its own fields optional), or does not have. */
type Field<K extends string, T> = [T] extends [undefined]
  ? { [P in K]?: never }
  : Record<string, never> extends T
    ? { [P in K]?: T }
    : { [P in K]: T };

export type CallOptions<Id extends ServedRouteId> = Field<'params', RouteParams<Id>> &
  Field<'query', RouteQuery<Id>> &
  Field<'body', RouteBody<Id>> &
  Omit<RequestOptions, 'method' | 'body'>;

/** The options argument: optional when the route needs nothing. */
type CallArgs<Id extends ServedRouteId> =
  Record<string, never> extends CallOptions<Id> ? [options?: CallOptions<Id>] : [options: CallOptions<Id>];

type AnyCall = { params?: Record<string, string>; query?: object; body?: unknown } & RequestOptions;

/** Calls a route and returns its answer, checked against the route's response schema. */
export async function call<Id extends ServedRouteId>(
  config: ClientConfig,
  id: Id,
  ...[options]: CallArgs<Id>
): Promise<RouteAnswer<Id>> {
  const { path, init } = requestOf(id, options);
  const { status, text } = await exchange(config, path, init);
  return (await checkedAnswer(id, status, text)) as RouteAnswer<Id>;
}

/** Opens a route whose answer is a stream (a job's logs); the caller reads it. */
export async function openStream<Id extends ServedRouteId>(
  config: ClientConfig,
  id: Id,
  ...[options]: CallArgs<Id>
): Promise<IncomingMessage> {
  const { path, init } = requestOf(id, options);
  return send(config, path, init);
}

function requestOf(id: ServedRouteId, options: object | undefined): { path: string; init: RequestOptions } {
  const { params, query, body, ...rest } = (options ?? {}) as AnyCall;
  const { method, path } = parseRouteId(id);
  return { path: urlOf(path, params, query), init: { ...rest, method, ...(body === undefined ? {} : { body }) } };
}

function urlOf(path: string, params: Record<string, string> | undefined, query: object | undefined): string {
  const filled = fillPath(path, params);
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) search.append(name, String(one));
  }
  return search.size > 0 ? `${filled}?${search}` : filled;
}

interface RouteChecks {
  checks: Readonly<Record<number, (value: unknown) => boolean>>;
}

async function checkedAnswer(id: ServedRouteId, status: number, text: string): Promise<unknown> {
  // 204 No Content: nothing to check
  if (status === 204) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid(id, status, `not JSON: ${JSON.stringify(text.slice(0, 80))}`);
  }
  // a computed path of a fixed folder: the bundle holds each route's module as its own chunk
  const { checks } = (await import(`./response-checks/${routeFileName(id)}.js`)) as RouteChecks;
  const check = checks[status];
  if (!check) throw invalid(id, status, `the route declares no answer with status ${status}`);
  if (!check(value)) throw invalid(id, status, await firstProblem(id, status, value));
  return value;
}

/** Where the answer departs from its schema, in words: TypeBox is loaded for this, on the failure's path only. */
async function firstProblem(id: ServedRouteId, status: number, value: unknown): Promise<string> {
  const [{ ROUTES }, { Errors }] = await Promise.all([import('@rankd/protocol/routes'), import('typebox/value')]);
  const spec: RouteSpec = ROUTES[id];
  const schema = spec.schema?.response?.[status] as Parameters<typeof Errors>[0];
  const [first] = Errors(schema, value);
  return first ? `${first.instancePath || 'the answer'}: ${first.message}` : 'it does not match its schema';
}

function invalid(id: ServedRouteId, status: number, problem: string): CliError {
  return new CliError(
    `the controller's answer to ${id} (${status}) is not what the route declares: ${problem} ` +
      `(${ErrorCode.ResponseInvalid}); is the controller the same version as this rankd (${RANKD_VERSION})?`,
    ExitCode.Software,
  );
}
