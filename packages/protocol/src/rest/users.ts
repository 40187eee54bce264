// REST schemas of users, API tokens and the audit log.
import Type from 'typebox';
import { AUDIT_LIMIT, DESCRIPTION_CHARS, schemaBounds, schemaLength } from '../limits.js';
import { Nullable } from '../nullable.js';
import { USER_NAME } from '../user-name.js';

/** admin: everything; operator: every job, exec, shell, doctor, inventory; user: its own jobs as its own Unix user; reader: reads. */
export const Role = Type.Union([
  Type.Literal('admin'),
  Type.Literal('operator'),
  Type.Literal('user'),
  Type.Literal('reader'),
]);
export type Role = Type.Static<typeof Role>;
export { ROLES } from '../roles.js';

/** User names: what a Unix login name may be, so that they read the same in the audit log. */
export const UserName = Type.String({ pattern: USER_NAME.source });
/** A Unix login name (no `:`, `/`, NUL or space; no leading `-`). */
export const UnixUserName = Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_.-]{0,31}\\$?$' });
/** The public id of a token: names it in lists and in the audit log; never a secret. */
export const Accessor = Type.String({ pattern: '^[a-f0-9]{16}$' });

export const UserCreate = Type.Object(
  {
    name: UserName,
    role: Role,
    /** The Unix user jobs run as; role `user` defaults to the user's name. */
    unixUser: Type.Optional(UnixUserName),
  },
  { additionalProperties: false },
);
export type UserCreate = Type.Static<typeof UserCreate>;

export const UserView = Type.Object({
  name: Type.String(),
  role: Role,
  unixUser: Nullable(Type.String()),
  createdAt: Type.String(),
  tokens: Type.Integer(),
});
export type UserView = Type.Static<typeof UserView>;

export const UserList = Type.Object({ users: Type.Array(UserView) });
export type UserList = Type.Static<typeof UserList>;
export const UserParams = Type.Object({ name: UserName });

/** A new token: the only time its secret is shown. */
export const TokenCreated = Type.Object({
  name: Type.String(),
  role: Role,
  unixUser: Nullable(Type.String()),
  accessor: Type.String(),
  token: Type.String(),
});
export type TokenCreated = Type.Static<typeof TokenCreated>;

export const TokenCreate = Type.Object(
  {
    /** Whose token; default the caller. Another user's needs admin. */
    user: Type.Optional(UserName),
    description: Type.Optional(Type.String(schemaLength(DESCRIPTION_CHARS))),
  },
  { additionalProperties: false },
);
export type TokenCreate = Type.Static<typeof TokenCreate>;

export const TokenView = Type.Object({
  accessor: Type.String(),
  user: Type.String(),
  description: Type.String(),
  createdAt: Type.String(),
  lastUsedAt: Nullable(Type.String()),
});
export type TokenView = Type.Static<typeof TokenView>;
export const TokenList = Type.Object({ tokens: Type.Array(TokenView) });
export type TokenList = Type.Static<typeof TokenList>;
export const TokenParams = Type.Object({ accessor: Accessor });
export const TokenQuery = Type.Object({ user: Type.Optional(UserName) });

/** What authenticated a request: an API token, or a dashboard session opened with one. */
export const Credential = Type.Object({
  kind: Type.Union([Type.Literal('api-token'), Type.Literal('dashboard-session')]),
  /** When the token was created. */
  createdAt: Type.String(),
  /** Null for an API token: it holds until revoked (rankd token revoke). A dashboard session ends at this time. */
  expiresAt: Nullable(Type.String()),
  /** The token's description, as given to `rankd token create --description`. */
  description: Type.String(),
});
export type Credential = Type.Static<typeof Credential>;

export const WhoAmI = Type.Object({
  name: Type.String(),
  role: Role,
  unixUser: Nullable(Type.String()),
  /** The accessor of the API token (of a dashboard session: of the token it was opened with). */
  accessor: Type.String(),
  credential: Credential,
});
export type WhoAmI = Type.Static<typeof WhoAmI>;

export const AuditEntry = Type.Object({
  id: Type.String(),
  time: Type.String(),
  /** The user name, or null when authentication failed. */
  user: Nullable(Type.String()),
  role: Nullable(Type.String()),
  /** The token's public accessor (never its secret). */
  accessor: Nullable(Type.String()),
  source: Type.String(),
  method: Type.String(),
  /** The route pattern (/v1/jobs/:id/cancel), or the path when no route matched. */
  route: Type.String(),
  resource: Type.Record(Type.String(), Type.String()),
  argv: Nullable(Type.Array(Type.String())),
  argvHash: Nullable(Type.String()),
  /** The names of the environment variables a job, exec or shell set for its program (never their values), sorted; null when it sets none. */
  envNames: Nullable(Type.Array(Type.String())),
  decision: Type.Union([Type.Literal('allow'), Type.Literal('deny')]),
  reason: Type.String(),
  /** The HTTP status; null while the request is still being served. */
  status: Nullable(Type.Integer()),
  durationMs: Nullable(Type.Number()),
  /** How many requests or connections the entry stands for: 1, or more for refusals counted per source and minute. */
  count: Type.Integer({ minimum: 1 }),
});
export type AuditEntry = Type.Static<typeof AuditEntry>;
export const AuditList = Type.Object({ entries: Type.Array(AuditEntry) });
export type AuditList = Type.Static<typeof AuditList>;
export const AuditQuery = Type.Object({
  since: Type.Optional(
    Type.String({
      maxLength: 64,
      description: 'An ISO time, milliseconds since the epoch, or a duration back from now (30s, 15m, 2h, 1d)',
    }),
  ),
  limit: Type.Optional(Type.Integer(schemaBounds(AUDIT_LIMIT))),
});
export type AuditQuery = Type.Static<typeof AuditQuery>;
