// A REST route's id is its method and path pattern, `GET /v1/jobs/:id`: the key of the
// route table (routes.ts) and of the policy. These helpers read an id without the table, so
// that the CLI builds its request URLs without loading TypeBox.

export interface RouteLine {
  method: string;
  /** The path pattern, `:name` for each parameter. */
  path: string;
}

export function parseRouteId(id: string): RouteLine {
  const space = id.indexOf(' ');
  return { method: id.slice(0, space), path: id.slice(space + 1) };
}

/** The path with each `:name` replaced by its parameter, URL-encoded. */
export function fillPath(path: string, params: Readonly<Record<string, string>> = {}): string {
  return path.replace(/:(\w+)/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`route ${path}: no value for :${name}`);
    return encodeURIComponent(value);
  });
}

/** A file name for what is generated per route (the CLI's response checks): `GET /v1/jobs/:id` → `get-v1-jobs-id`. */
export function routeFileName(id: string): string {
  return id
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}
