// What `rankd agent` runs, as one module graph: the agent, its config and its facts
// reader. scripts/bundle-agent.mjs bundles this module, with the protocol schemas,
// TypeBox, ws and pino, into dist/bundle/daemon.js; load-daemon.ts picks that file or
// this module. The command takes everything from here, so that the process never holds
// two copies of a module (a bundled one and a compiled one).
import type { FactsSource } from './link/facts-publisher.js';
import { factsHash, readFacts } from '@rankd/topology';

export { startAgent, type RunningAgent } from './agent.js';
export {
  resolveAgentConfig,
  readConfigFile,
  configFromEnv,
  parseLabels,
  DEFAULT_CONFIG_FILE,
  type AgentConfig,
  type AgentConfigFile,
} from './config.js';

/** This node's facts from sysfs/procfs under root ("/" for the live system). */
export function factsSource(root: string): FactsSource {
  return { read: () => readFacts({ root }), hash: factsHash };
}

// The files the agent finds relative to its own module, which the bundle must still find
// from dist/bundle/: exported so that a test can ask the bundle itself where they are.
export { findSupervisor } from './ranks/supervisor-binary.js';
