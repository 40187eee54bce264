// REST schemas of the queue (`rankd queue`, like squeue) and of a plan's place in it.
import Type from 'typebox';
import { Nullable } from '../nullable.js';
import { PlacementSpec, RankMap } from '../plan.js';
import { JobState, MAX_PRIORITY, MIN_PRIORITY } from './jobs.js';

/** What a job asks for, from its plan on the idle cluster. */
export const JobDemand = Type.Object({
  ranks: Type.Integer(),
  nodes: Type.Integer(),
  coresPerNode: Type.Integer(),
  gpusPerNode: Type.Integer(),
  cores: Type.Integer(),
  gpus: Type.Integer(),
  mode: Type.Union([Type.Literal('normal'), Type.Literal('exclusive'), Type.Literal('share')]),
});
export type JobDemand = Type.Static<typeof JobDemand>;

export const QueueEntry = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  owner: Nullable(Type.String()),
  state: JobState,
  reason: Type.String(),
  /** 1 for the job the scheduler considers first; null once started. */
  position: Nullable(Type.Integer({ minimum: 1 })),
  priority: Type.Integer(),
  asked: Nullable(JobDemand),
  /** What it holds now: its nodes, and the hardware threads (of whole cores) and GPUs on them; null while queued. */
  held: Nullable(Type.Object({ nodes: Type.Array(Type.String()), cpus: Type.Integer(), gpus: Type.Integer() })),
  timeLimit: Nullable(Type.Number()),
  createdAt: Type.String(),
  startedAt: Nullable(Type.String()),
  /** The current attempt, 0-based: above 0, the job is restarting (or running again). */
  attempt: Type.Integer({ minimum: 0 }),
  maxRestarts: Type.Integer({ minimum: 0 }),
});
export type QueueEntry = Type.Static<typeof QueueEntry>;

export const QueueList = Type.Object({
  /** Running jobs first (oldest first), then queued ones in the order they will start. */
  jobs: Type.Array(QueueEntry),
  /** Milliseconds the last scheduling pass took. */
  lastPassMs: Type.Number(),
});
export type QueueList = Type.Static<typeof QueueList>;

/** The first form of POST /v1/plan, its placement fields at the top level: accepted until the next release, marked deprecated in the OpenAPI document. */
function deprecatedTopLevel<P extends Record<string, Type.TSchema>>(properties: P): P {
  const note = {
    deprecated: true,
    description:
      'Deprecated: give it in `placement`, as POST /v1/jobs takes it; the top-level form goes in the next release.',
  };
  return Object.fromEntries(
    Object.entries(properties).map(([key, schema]) => [key, Type.With(schema, note)]),
  ) as unknown as P;
}

/** POST /v1/plan: the placement a job would be submitted with (the `placement` of POST /v1/jobs), and its priority. */
export const PlanRequest = Type.Object(
  {
    placement: Type.Optional(PlacementSpec),
    priority: Type.Optional(Type.Integer({ minimum: MIN_PRIORITY, maximum: MAX_PRIORITY })),
    ...deprecatedTopLevel(PlacementSpec.properties),
  },
  { additionalProperties: false },
);
export type PlanRequest = Type.Static<typeof PlanRequest>;

/** The rank map a job would get now; when it would wait, its plan on the idle cluster and why it waits. */
export const PlanAnswer = Type.Object({
  ...RankMap.properties,
  schedule: Type.Object({ startsNow: Type.Boolean(), reason: Nullable(Type.String()) }),
});
export type PlanAnswer = Type.Static<typeof PlanAnswer>;
