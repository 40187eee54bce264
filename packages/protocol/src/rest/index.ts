export * from './common.js';
export * from './nodes.js';
export * from './jobs.js';
export * from './fleet.js';
export * from './users.js';
export * from './queue.js';
export * from './session.js';
