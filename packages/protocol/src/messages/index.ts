// The message tables of the agent gateway, one per direction (and one for binary frames).
import { defineMessages, type MessageOf } from '../codec.js';
import { ErrorMessage, FactsUpdate, Heartbeat, Hello, Welcome } from './session.js';
import {
  JobAbort,
  JobRelease,
  JobResume,
  JobSignal,
  JobStart,
  RankExit,
  RankOutput,
  RankStarted,
  RanksReport,
  RankStdin,
  RankStdinAck,
  RankStdinClosed,
  RankStdinEnd,
} from './jobs.js';
import {
  DoctorInspect,
  DoctorNodeReport,
  ExecCancel,
  ExecResult,
  ExecRun,
  FleetPing,
  FleetPong,
  ProbeConnect,
  ProbeListen,
  ProbeListening,
  ProbeResult,
} from './fleet.js';
import { FabricMeasure, FabricMeasured, FabricServe, FabricServing, FabricStop } from './fabric.js';
import { PmiChunk, PmiFailed, PmiFence, PmiFenced, PmiFetch } from './pmi.js';
import {
  OmpiAbort,
  OmpiDaemonRequest,
  OmpiDaemonRun,
  OmpiDaemonState,
  OmpiLauncherState,
  OmpiStart,
} from './openmpi.js';
import { PtyAck, PtyClose, PtyExit, PtyInput, PtyOpen, PtyOpened, PtyOutput, PtyResize, PtySignal } from './fleet.js';

export * from './envelope.js';
export * from './session.js';
export * from './jobs.js';
export * from './fleet.js';
export * from './fabric.js';
export * from './pmi.js';
export * from './pmi-frames.js';
export * from './openmpi.js';

/** Frames the controller accepts from an agent. */
export const AgentMessages = defineMessages([
  Hello,
  Heartbeat,
  FactsUpdate,
  ErrorMessage,
  RankStarted,
  RankExit,
  RanksReport,
  ExecResult,
  FleetPong,
  DoctorNodeReport,
  ProbeListening,
  ProbeResult,
  FabricServing,
  FabricMeasured,
  PtyOpened,
  PtyOutput,
  PtyExit,
  PmiFence,
  PmiFetch,
  PmiFailed,
  OmpiDaemonRequest,
  OmpiDaemonState,
  OmpiLauncherState,
  RankStdinAck,
  RankStdinClosed,
]);

/** Frames the agent accepts from the controller. */
export const ControllerMessages = defineMessages([
  Welcome,
  ErrorMessage,
  JobStart,
  JobAbort,
  JobSignal,
  JobResume,
  JobRelease,
  ExecRun,
  ExecCancel,
  FleetPing,
  DoctorInspect,
  ProbeListen,
  ProbeConnect,
  FabricServe,
  FabricStop,
  FabricMeasure,
  PtyOpen,
  PtyInput,
  PtyAck,
  PtyResize,
  PtySignal,
  PtyClose,
  PmiFenced,
  PmiChunk,
  OmpiStart,
  OmpiAbort,
  OmpiDaemonRun,
  OmpiDaemonState,
  RankStdin,
  RankStdinEnd,
]);

/** Binary frames the controller accepts from an agent: a header and raw bytes. */
export const AgentBinaryMessages = defineMessages([RankOutput]);

/** Any frame an agent sends as text: what `ControllerLink.send` takes and the gateway's handlers receive. */
export type AgentMessage = MessageOf<typeof AgentMessages>;
/** Any frame the controller sends: what an agent link's `send` takes and the agent's handlers receive. */
export type ControllerMessage = MessageOf<typeof ControllerMessages>;
/** The header of any binary frame an agent sends. */
export type AgentBinaryMessage = MessageOf<typeof AgentBinaryMessages>;
