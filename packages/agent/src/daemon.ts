// What `rankd agent` runs, as one module graph: the agent, its config and its facts
// reader. scripts/bundle-agent.mjs bundles this module, with the protocol schemas,
// TypeBox, ws and pino, into dist/bundle/daemon.js; load-daemon.ts picks that file or
// this module. The command takes everything from here, so that the process never holds
// two copies of a module (a bundled one and a compiled one).
import type { FactsSource } from './link/facts-publisher.js';
import { factsHash, gpuVisibilityFromEnv, readFacts } from '@rankd/topology';

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

/**
 * This node's facts from sysfs/procfs under root ("/" for the live system). The GPUs the
 * agent was granted (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES: a Slurm allocation, a
 * pod) are taken from its own environment once, here at its start: never from a job's.
 */
export function factsSource(root: string, env: NodeJS.ProcessEnv = process.env): FactsSource {
  const gpuVisibility = gpuVisibilityFromEnv(env);
  return { read: () => readFacts({ root, gpuVisibility }), hash: factsHash };
}

// The files the agent finds relative to its own module, which the bundle must still find
// from dist/bundle/: exported so that a test can ask the bundle itself where they are.
export { findSupervisor } from './ranks/supervisor-binary.js';
