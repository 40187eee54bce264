export * from './common.js';
export * from './nodes.js';
