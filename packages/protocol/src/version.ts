export const RANKD_VERSION = '0.1.0';
/** Bumped with the subprotocol name; capabilities cover additive changes. */
export const PROTOCOL_VERSION = 1;
