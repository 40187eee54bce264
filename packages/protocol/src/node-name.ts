// Node names are certificate subjects, store keys and path components on agents: one
// sane DNS-label alphabet, checked on both ends, so that `/`, `..`, NUL, spaces or
// control characters can never reach a CN, a path or a log line.

/** Lower- and upper-case letters, digits, `-`, `_` and `.`; 1..63 characters; starts with a letter or digit. */
const NODE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/** Why this name cannot be a node name, or null when it can. */
export function nodeNameProblem(name: string): string | null {
  if (typeof name !== 'string' || name.length === 0) return 'a node name cannot be empty';
  if (name.includes('\0')) return 'a node name cannot contain NUL';
  if (name.includes('/')) return 'a node name cannot contain "/"';
  if (name.includes('..')) return 'a node name cannot contain ".."';
  if (!NODE_NAME.test(name))
    return `node name ${JSON.stringify(name.slice(0, 80))} must be 1-63 characters of A-Z a-z 0-9 - _ . starting with a letter or digit`;
  return null;
}

/** Join tokens look like kubeadm's bootstrap tokens: a public id, a dot, a secret. */
export const JOIN_TOKEN_PATTERN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;

/** The largest CSR (PEM) the controller reads. A P-256 CSR is under 600 bytes. */
export const MAX_CSR_BYTES = 8 * 1024;
