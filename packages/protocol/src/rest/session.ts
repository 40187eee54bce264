// REST schemas of the dashboard's login and session.
import Type from 'typebox';
import { Nullable } from '../nullable.js';
import { Role } from './users.js';

/** What `rankd dashboard` turns into a URL: the controller's address + `path`. */
export const LoginCode = Type.Object({
  /** `/ui/#login=<code>`: the code rides in the fragment, which browsers never send. */
  path: Type.String(),
  expiresAt: Type.String({ description: 'ISO 8601' }),
});
export type LoginCode = Type.Static<typeof LoginCode>;

const Secret = Type.String({ minLength: 1, maxLength: 256 });

/** A one-time login code, or an API token pasted into the login form. */
export const SessionLogin = Type.Union([
  Type.Object({ code: Secret }, { additionalProperties: false }),
  Type.Object({ token: Secret }, { additionalProperties: false }),
]);
export type SessionLogin = Type.Static<typeof SessionLogin>;

export const Grant = Type.Union([Type.Literal('all'), Type.Literal('own')]);

export const SessionView = Type.Object({
  user: Type.String(),
  role: Role,
  /** What the role may do (permission → all, or own jobs only): the dashboard shows only the actions it may take. */
  grants: Type.Record(Type.String(), Grant),
  /** The value of X-Rankd-CSRF for state-changing requests; null when the caller used a bearer token. */
  csrf: Nullable(Type.String()),
  expiresAt: Nullable(Type.String({ description: 'ISO 8601' })),
});
export type SessionView = Type.Static<typeof SessionView>;
