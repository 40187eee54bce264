// Open MPI jobs (`mpi: 'openmpi'`): Open MPI's own mpirun, run by rank 0's agent, starts
// its orted daemons through rankd instead of ssh. Each orted is started by the agent of
// its node, as part of the job, and its end is reported; every rank is still a rankd rank
// (planned CPUs, binding check, spool output), found by the agent of its node when the
// supervisor orted started writes rank.json.
//
//   mpirun ─rsh helper─▶ launcher agent ─ompi.daemon.request─▶ controller ─ompi.daemon.run─▶ agent of HOST
//   agent of HOST ─ompi.daemon.state─▶ controller ─ompi.daemon.state─▶ launcher agent ─▶ rsh helper's exit
import Type from 'typebox';
import { message } from './envelope.js';
import { RankLaunch } from './jobs.js';
import { OrtedLaunch } from '../orted-launch.js';

const JobId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' });
const NodeName = Type.String({ minLength: 1, maxLength: 253 });
const DaemonId = Type.Integer({ minimum: 0, maximum: 1_000_000 });
/** The last bytes of a launcher's or daemon's own stdout and stderr, as text. */
const OutputTail = Type.String({ maxLength: 16384 });

/** What rank 0's node needs to run mpirun for the job. */
export const OmpiLauncherSpec = Type.Object({
  /** The node of each rank, in rank order (Open MPI's sequential mapper: rank R on line R). */
  hosts: Type.Array(NodeName, { minItems: 1, maxItems: 65536 }),
  /** The job's environment; mpirun gets its OMPI_*, OPAL_* and PMIX_* variables. */
  env: Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 131072 })),
});
export type OmpiLauncherSpec = Type.Static<typeof OmpiLauncherSpec>;

/** controller → agent: this node's ranks of an Open MPI job; orted will start them. Rank 0's node also runs mpirun. */
export const OmpiStart = message('ompi.start', {
  jobId: JobId,
  leaseMs: Type.Integer({ minimum: 1000 }),
  ranks: Type.Array(RankLaunch, { minItems: 1, maxItems: 4096 }),
  launcher: Type.Optional(OmpiLauncherSpec),
  /** The submitter's exported environment, as in job.start; the ranks' alone (mpirun and orted never get it). */
  exportEnv: Type.Optional(Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 131072 }))),
});
export type OmpiStart = Type.Static<typeof OmpiStart>;

/** controller → agent: the job is ending (or mpirun has ended): end mpirun and the orteds here, and ranks never started. */
export const OmpiAbort = message('ompi.abort', {
  jobId: JobId,
  graceMs: Type.Integer({ minimum: 0, maximum: 3_600_000 }),
  reason: Type.String({ maxLength: 1024 }),
});
export type OmpiAbort = Type.Static<typeof OmpiAbort>;

/**
 * launcher agent → controller: mpirun asks for a daemon on `host`. Only the launch's own
 * values travel, as typed fields (orted-launch.ts); never a command: the controller builds
 * the daemon's arguments itself.
 */
export const OmpiDaemonRequest = message('ompi.daemon.request', {
  jobId: JobId,
  daemon: DaemonId,
  host: NodeName,
  orted: OrtedLaunch,
});
export type OmpiDaemonRequest = Type.Static<typeof OmpiDaemonRequest>;

/**
 * controller → agent of the host: run the job's orted, the node's own `orted` program, with
 * these arguments (built by the controller: orted-launch.ts ortedArgs), as the job's user,
 * without a shell. The agent rebuilds them from its own record of the job and refuses
 * anything else.
 */
export const OmpiDaemonRun = message('ompi.daemon.run', {
  jobId: JobId,
  daemon: DaemonId,
  args: Type.Array(Type.String({ maxLength: 131072 }), { minItems: 1, maxItems: 3072 }),
});
export type OmpiDaemonRun = Type.Static<typeof OmpiDaemonRun>;

const ProcState = {
  state: Type.Union([Type.Literal('started'), Type.Literal('exited'), Type.Literal('failed')]),
  pid: Type.Optional(Type.Integer({ minimum: 1 })),
  code: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  signal: Type.Optional(Type.Union([Type.String({ maxLength: 16 }), Type.Null()])),
  /** Why it failed (it never ran, or its status is unknown). */
  message: Type.Optional(Type.String({ maxLength: 4096 })),
  output: Type.Optional(OutputTail),
};

/** agent of the host → controller, and controller → launcher agent: a daemon started, exited, or could not run. */
export const OmpiDaemonState = message('ompi.daemon.state', {
  jobId: JobId,
  daemon: DaemonId,
  host: NodeName,
  ...ProcState,
});
export type OmpiDaemonState = Type.Static<typeof OmpiDaemonState>;

/** launcher agent → controller: mpirun started, exited, or could not run. */
export const OmpiLauncherState = message('ompi.launcher.state', {
  jobId: JobId,
  ...ProcState,
});
export type OmpiLauncherState = Type.Static<typeof OmpiLauncherState>;
