export * from './errors.js';
export * from './wire.js';
export * from './codec.js';
export * from './facts.js';
export * from './cpuset.js';
export * from './plan.js';
export * from './messages/index.js';
export * from './rest/index.js';
export { PROTOCOL_VERSION, RANKD_VERSION } from './version.js';
