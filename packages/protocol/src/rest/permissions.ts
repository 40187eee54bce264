// What a role may be granted: one permission per kind of operation. The route table
// (routes.ts) names the permission each route needs; the controller's policy
// (packages/controller/src/api/policy.ts) says which roles hold which. TypeBox-free, so
// that the CLI and the dashboard can name them without loading the schema library.
export type Permission =
  | 'api.read' // the OpenAPI document, whoami
  | 'nodes.read'
  | 'plan'
  | 'jobs.read'
  | 'jobs.submit'
  | 'jobs.control' // cancel, signal
  | 'jobs.stdin' // write to a job's stdin: its owner's, or an admin's
  | 'jobs.priority' // submit above the default priority
  | 'queue.read' // the whole queue, without command lines
  | 'logs.read'
  | 'inventory.read'
  | 'inventory.write'
  | 'exec'
  | 'ping'
  | 'doctor'
  | 'checks.run' // fabric checks: they load the links they measure
  | 'shell'
  | 'tokens.self' // one's own tokens (admin: anyone's)
  | 'users.manage'
  | 'nodes.manage' // join tokens, node removal (revokes its certificates)
  | 'nodes.drain' // drain and resume
  | 'audit.read'
  | 'metrics.read'; // GET /metrics: the fleet and the controller in numbers

/** A grant: on everything, or (the role `user`) on its own jobs only, run as its own Unix user only. */
export type Scope = 'all' | 'own';
