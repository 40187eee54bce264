export { startAgent, AGENT_CAPABILITIES, type AgentOptions, type RunningAgent } from './agent.js';
export { resolveAgentConfig, readConfigFile, configFromEnv, parseLabels, DEFAULT_CONFIG_FILE, type AgentConfig, type AgentConfigFile } from './config.js';
export { ControllerLink } from './link/controller-link.js';
export type { FactsSource } from './link/facts-publisher.js';
export { enroll, fetchPinnedCa, loadIdentity, type NodeIdentity } from './link/enroll.js';
export { keyAndCsr } from './link/csr.js';
