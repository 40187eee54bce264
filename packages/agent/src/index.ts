// @rankd/agent: the node agent as a daemon. `rankd agent` calls loadDaemon() and runs what
// it returns (daemon.ts: startAgent, the config readers, the facts source), from the
// agent's bundle (RANKD_DEV=1: the compiled modules). Nothing else is exported as a value:
// importing this entry loads load-daemon.js alone, so the process never holds a compiled
// agent beside the bundled one. Tests reach the agent's modules through the root package's #agent/* imports.
export { loadDaemon, type Daemon } from './load-daemon.js';
export type { AgentOptions, RunningAgent } from './agent.js';
export type { AgentConfig, AgentConfigFile } from './config.js';
export type { FactsSource } from './link/facts-publisher.js';
export type { NodeIdentity } from './link/enroll.js';
