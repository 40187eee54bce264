// The fastify routes, registered from the route table of @rankd/protocol: each plugin
// attaches its handlers by route id, and the method, path, schema and body limit come from
// the table, so that what is validated, documented (OpenAPI) and authorized is declared once.
import type {
  ContextConfigDefault,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
  RouteShorthandOptions,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { parseRouteId } from '@rankd/protocol/route-id';
import { ROUTES, type RouteSpec, type Routes, type ServedRouteId } from '@rankd/protocol/routes';

/** A handler whose request and answer are typed by its route's schema. */
export type RouteHandler<Id extends ServedRouteId> = RouteHandlerMethod<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  RouteGenericInterface,
  ContextConfigDefault,
  Routes[Id]['schema'],
  TypeBoxTypeProvider
>;

export type RouteHandlers = { [Id in ServedRouteId]?: RouteHandler<Id> };

/** What the controller alone adds to a route (a serializer of its own). */
export type RouteExtras = { [Id in ServedRouteId]?: Omit<RouteShorthandOptions, 'schema' | 'bodyLimit'> };

/** Registers the table's routes that `handlers` serves, in the table's order (the OpenAPI document's). */
export function serveRoutes(app: FastifyInstance, handlers: RouteHandlers, extras: RouteExtras = {}): void {
  const table: Readonly<Record<string, RouteSpec>> = ROUTES;
  const byId = handlers as Readonly<Record<string, RouteHandlerMethod>>;
  const extrasById = extras as Readonly<Record<string, RouteShorthandOptions>>;
  for (const [id, spec] of Object.entries(table)) {
    const handler = byId[id];
    if (!handler) continue;
    const { method, path } = parseRouteId(id);
    app.route({
      method,
      url: path,
      ...(spec.schema ? { schema: spec.schema } : {}),
      ...(spec.bodyLimit ? { bodyLimit: spec.bodyLimit } : {}),
      ...extrasById[id],
      handler,
    });
  }
}
