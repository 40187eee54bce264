// The two dispatch maps of the agent gateway, one per direction.
import { defineMessages } from '../codec.js';
import { ErrorMessage, FactsUpdate, Heartbeat, Hello, Welcome } from './session.js';
import { JobAbort, JobRelease, JobResume, JobSignal, JobStart, RankExit, RankOutput, RankStarted, RanksReport } from './jobs.js';
import { DoctorInspect, DoctorNodeReport, ExecResult, ExecRun, FleetPing, FleetPong, ProbeConnect, ProbeListen, ProbeListening, ProbeResult } from './fleet.js';
import { PtyAck, PtyClose, PtyExit, PtyInput, PtyOpen, PtyOpened, PtyOutput, PtyResize, PtySignal } from './fleet.js';

export * from './envelope.js';
export * from './session.js';
export * from './jobs.js';
export * from './fleet.js';

/** Frames the controller accepts from an agent. */
export const AgentMessages = defineMessages([Hello, Heartbeat, FactsUpdate, ErrorMessage, RankStarted, RankExit, RanksReport,
  ExecResult, FleetPong, DoctorNodeReport, ProbeListening, ProbeResult, PtyOpened, PtyOutput, PtyExit]);

/** Frames the agent accepts from the controller. */
export const ControllerMessages = defineMessages([Welcome, ErrorMessage, JobStart, JobAbort, JobSignal, JobResume, JobRelease,
  ExecRun, FleetPing, DoctorInspect, ProbeListen, ProbeConnect, PtyOpen, PtyInput, PtyAck, PtyResize, PtySignal, PtyClose]);

/** Binary frames the controller accepts from an agent: a header and raw bytes. */
export const AgentBinaryMessages = defineMessages([RankOutput]);
