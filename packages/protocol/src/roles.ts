// The role names, without the schema library: `rankd user add --role` lists and checks
// them, and loading TypeBox (the Role schema's home, rest/users.ts) for four words would
// put the schema library's load time into every CLI start-up.
import type { Role } from './rest/users.js';

export const ROLES: readonly Role[] = ['admin', 'operator', 'user', 'reader'];
