// The rule for rankd user names, without the schema library: the UserName schema
// (rest/users.ts) is built from it, and the CLI checks --user and --admin with it before
// any request. A Unix login name's alphabet, so that names read the same in the audit log.
export const USER_NAME = /^[a-z_][a-z0-9_.-]{0,31}$/;
