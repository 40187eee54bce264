// Where `rankd shell` opens its WebSocket, and the subprotocol it offers. Kept apart
// from the shell's message schemas (rest/fleet.ts) so that the CLI connects without
// loading TypeBox.
export const SHELL_PATH = '/v1/shell';
export const SHELL_SUBPROTOCOL = 'rankd.shell.v1';
