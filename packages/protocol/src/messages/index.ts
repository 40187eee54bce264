// The two dispatch maps of the agent gateway, one per direction.
import { defineMessages } from '../codec.js';
import { ErrorMessage, FactsUpdate, Heartbeat, Hello, Welcome } from './session.js';
import { JobAbort, JobRelease, JobResume, JobSignal, JobStart, RankExit, RankOutput, RankStarted, RanksReport } from './jobs.js';

export * from './envelope.js';
export * from './session.js';
export * from './jobs.js';

/** Frames the controller accepts from an agent. */
export const AgentMessages = defineMessages([Hello, Heartbeat, FactsUpdate, ErrorMessage, RankStarted, RankOutput, RankExit, RanksReport]);

/** Frames the agent accepts from the controller. */
export const ControllerMessages = defineMessages([Welcome, ErrorMessage, JobStart, JobAbort, JobSignal, JobResume, JobRelease]);
