// PMI messages: the job-wide key-value exchange (fence) behind every agent's PMI-1
// server, and the reports that end an MPI job (abort, a rank gone before finalize).
//
// A fence: every agent gathers the puts of its local ranks until all of them have
// entered `barrier_in`, sends them up (`pmi.fence`, split with `more` when large), and
// waits. Once every node of the job has fenced, the controller answers each with
// `pmi.fenced`: the merged puts of that epoch inline when they are small, else only
// their size in chunks, which an agent pulls (`pmi.fetch` → `pmi.chunk`) the first
// time one of its ranks asks for a key it does not hold. So a fence of a large job
// costs a barrier, and only the nodes that read the cards move them.
import Type from 'typebox';
import { message } from './envelope.js';

const JobId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' });
const Rank = Type.Integer({ minimum: 0 });
/** PMI-1 limits: keys of at most 64 bytes, values of at most 1024 (the wire line itself is 1024). */
export const PMI_KEY_MAX = 64;
export const PMI_VALUE_MAX = 1024;
/** Fence epochs count from 0 for every job; one per barrier. */
const Epoch = Type.Integer({ minimum: 0, maximum: 1_000_000 });

/** Key-value pairs in the order they were put; a later pair overrides an earlier one. */
export const PmiPairs = Type.Array(
  Type.Tuple([Type.String({ minLength: 1, maxLength: PMI_KEY_MAX }), Type.String({ maxLength: PMI_VALUE_MAX })]),
  {
    maxItems: 65536,
  },
);
export type PmiPairs = Type.Static<typeof PmiPairs>;

/** What a job's ranks need from their agent's PMI server, sent with job.start. */
export const PmiJobSpec = Type.Object({
  /** The world size: PMI_SIZE and the universe size. */
  size: Type.Integer({ minimum: 1 }),
  /** PMI_process_mapping, from the rank map; null when it would not fit a PMI value. */
  processMapping: Type.Union([Type.String({ maxLength: PMI_VALUE_MAX }), Type.Null()]),
});
export type PmiJobSpec = Type.Static<typeof PmiJobSpec>;

/**
 * agent → controller: this node's puts of one epoch, in frames numbered by `part` from 0
 * (a part 0 starts the node's fence afresh, as after a reconnect); the frame without
 * `more` means "every local rank is in the barrier".
 */
export const PmiFence = message('pmi.fence', {
  jobId: JobId,
  epoch: Epoch,
  part: Type.Integer({ minimum: 0, maximum: 65535 }),
  pairs: PmiPairs,
  more: Type.Optional(Type.Boolean()),
});
export type PmiFence = Type.Static<typeof PmiFence>;

/** controller → agent: every node has fenced; the merged puts inline, or their chunk count to pull. */
export const PmiFenced = message('pmi.fenced', {
  jobId: JobId,
  epoch: Epoch,
  /** The merged puts of the epoch, when they are small enough to travel with every answer. */
  pairs: Type.Optional(PmiPairs),
  /** How many chunks hold the epoch's puts when they are not inline (0 when inline). */
  chunks: Type.Integer({ minimum: 0, maximum: 65536 }),
});
export type PmiFenced = Type.Static<typeof PmiFenced>;

/** agent → controller: send chunk `chunk` of an epoch's merged puts (answered by pmi.chunk with the same id). */
export const PmiFetch = message('pmi.fetch', {
  jobId: JobId,
  epoch: Epoch,
  chunk: Type.Integer({ minimum: 0, maximum: 65535 }),
});
export type PmiFetch = Type.Static<typeof PmiFetch>;

/** controller → agent: one chunk of an epoch's merged puts, or why it cannot be had. */
export const PmiChunk = message('pmi.chunk', {
  jobId: JobId,
  epoch: Epoch,
  chunk: Type.Integer({ minimum: 0, maximum: 65535 }),
  pairs: PmiPairs,
  error: Type.Optional(Type.String({ maxLength: 1024 })),
});
export type PmiChunk = Type.Static<typeof PmiChunk>;

/**
 * agent → controller: a rank ended the job through PMI. `cmd=abort exitcode=N` gives the
 * job's exit code N; a rank whose PMI connection closed before finalize, or that broke
 * the protocol, gives none (the job fails with its ranks' own codes).
 */
export const PmiFailed = message('pmi.failed', {
  jobId: JobId,
  rank: Rank,
  exitCode: Type.Union([Type.Integer({ minimum: 0, maximum: 255 }), Type.Null()]),
  reason: Type.String({ maxLength: 1024 }),
});
export type PmiFailed = Type.Static<typeof PmiFailed>;
