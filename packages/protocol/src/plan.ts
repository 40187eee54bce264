// The placement spec (what the user asks for) and the rank map (what the planner
// answers). `rankd plan`, `rankd run` and the REST job spec share the spec, so every
// field is optional and means the same thing everywhere.
import Type from 'typebox';
import { PLACEMENT, schemaBounds } from './limits.js';
import { Nullable } from './nullable.js';

const Name = Type.String({ minLength: 1, maxLength: 253 });
const IntList = Type.Array(Type.Integer({ minimum: 0 }), { maxItems: 65536 });

/** `--ranks-per-node`: a count, or one rank per NUMA node, per package, or per GPU. */
export const RanksPerNode = Type.Union([
  Type.Integer(schemaBounds(PLACEMENT.ranksPerNode)),
  Type.Literal('numa'),
  Type.Literal('socket'),
  Type.Literal('gpu'),
]);
export type RanksPerNode = Type.Static<typeof RanksPerNode>;

export const PlacementSpec = Type.Object(
  {
    /** How many nodes; default every candidate node (or as many as ntasks needs). */
    nodes: Type.Optional(Type.Integer(schemaBounds(PLACEMENT.nodes))),
    /** Exactly these nodes, in this order. */
    nodelist: Type.Optional(Type.Array(Name, { minItems: 1, maxItems: 65536 })),
    /** An inventory pattern; without an inventory, a glob over node names. */
    group: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    /** Total ranks. */
    ntasks: Type.Optional(Type.Integer(schemaBounds(PLACEMENT.ntasks))),
    ranksPerNode: Type.Optional(RanksPerNode),
    distribution: Type.Optional(Type.Union([Type.Literal('block'), Type.Literal('cyclic')])),
    /** More ranks than cores: ranks share cores, each still pinned to one (mpirun --oversubscribe). */
    oversubscribe: Type.Optional(Type.Boolean()),
    /** Compute cores per rank; default the site's (the controller's --default-cpus-per-rank: the rank's whole share, or N). */
    cpusPerRank: Type.Optional(Type.Integer(schemaBounds(PLACEMENT.cpusPerRank))),
    /** One hardware thread per compute core, or all of them. */
    ht: Type.Optional(Type.Union([Type.Literal('first'), Type.Literal('all')])),
    /** CPUs reserved per rank for communication worker threads (oneCCL workers). */
    commWorkers: Type.Optional(Type.Integer(schemaBounds(PLACEMENT.commWorkers))),
    /** Where the workers go: the sibling threads of the share's last cores, or the last cores themselves. */
    commOn: Type.Optional(Type.Union([Type.Literal('siblings'), Type.Literal('cores')])),
    memBind: Type.Optional(Type.Union([Type.Literal('local'), Type.Literal('none')])),
    /** `local`, `all`, `none`, or comma-separated globs over RDMA device names. */
    nic: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    gpusPerRank: Type.Optional(Type.Integer(schemaBounds(PLACEMENT.gpusPerRank))),
    gpuBind: Type.Optional(Type.Union([Type.Literal('none'), Type.Literal('visible')])),
    masterPort: Type.Optional(Type.Integer(schemaBounds(PLACEMENT.masterPort))),
    /** Overrides applied last to every rank's environment. */
    env: Type.Optional(
      Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Type.String({ maxLength: 65536 }), {
        additionalProperties: false,
      }),
    ),
    /** `mpi` adds the PMI_/OMPI_/MPI_ shims some programs read instead of torch's names. */
    envProfile: Type.Optional(Type.Union([Type.Literal('default'), Type.Literal('mpi')])),
    /** Whole nodes only: the job holds every CPU and GPU of its nodes, and no other job runs there. */
    exclusive: Type.Optional(Type.Boolean()),
    /** Overlap with other jobs: plan on whole nodes and hold nothing (rankd's behaviour before allocations). */
    share: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type PlacementSpec = Type.Static<typeof PlacementSpec>;

/** One RDMA port a rank uses, with the GID chosen the way NCCL chooses it. */
export const RankNic = Type.Object({
  device: Type.String(),
  port: Type.Integer({ minimum: 1 }),
  netdev: Nullable(Type.String()),
  linkLayer: Type.Union([Type.Literal('InfiniBand'), Type.Literal('Ethernet'), Type.Literal('unknown')]),
  /** RoCE only: null on InfiniBand and where no usable GID exists. */
  gidIndex: Nullable(Type.Integer({ minimum: 0 })),
  gid: Nullable(Type.String()),
});
export type RankNic = Type.Static<typeof RankNic>;

export const RankEntry = Type.Object({
  rank: Type.Integer({ minimum: 0 }),
  localRank: Type.Integer({ minimum: 0 }),
  nodeRank: Type.Integer({ minimum: 0 }),
  node: Name,
  address: Nullable(Type.String()),
  /** Compute CPUs (OS numbering). */
  cpus: IntList,
  /** CPUs reserved for communication workers. */
  commCpus: IntList,
  memNodes: IntList,
  /** GPU indexes in PCI bus order. */
  gpus: IntList,
  nics: Type.Array(RankNic, { maxItems: 256 }),
  env: Type.Record(Type.String(), Type.String()),
});
export type RankEntry = Type.Static<typeof RankEntry>;

/**
 * The site's default CPUs per rank, for jobs that do not say `-c` (`rankd controller
 * --default-cpus-per-rank`): `share` divides each node among its ranks; N gives each rank N
 * cores, as Slurm gives 1 CPU per task.
 */
export const CpuDefault = Type.Union([Type.Literal('share'), Type.Integer({ minimum: 1, maximum: 65536 })]);
export type CpuDefault = Type.Static<typeof CpuDefault>;

/** Which rule gave a job's ranks their compute cores. */
export const RankCpuPolicy = Type.Object({
  /** The site's default at planning time. */
  site: CpuDefault,
  /**
   * `asked`: the job's own -c; `site`: the site's default N; `share`: the node divided among
   * its ranks (the site's default); `exclusive`: divided too, whatever the site's default,
   * since an --exclusive job holds its whole nodes anyway.
   */
  applied: Type.Union([Type.Literal('asked'), Type.Literal('site'), Type.Literal('share'), Type.Literal('exclusive')]),
  /** Compute cores per rank: the job's -c or the site's N; null for a share. */
  cpusPerRank: Nullable(Type.Integer({ minimum: 1 })),
});
export type RankCpuPolicy = Type.Static<typeof RankCpuPolicy>;

export const RankMapNode = Type.Object({
  nodeRank: Type.Integer({ minimum: 0 }),
  name: Name,
  address: Nullable(Type.String()),
  /** Global ranks on this node in local-rank order. */
  ranks: IntList,
  /** Link layers of the active RDMA ports this node's ranks use; empty means TCP only. */
  linkLayers: Type.Array(Type.String(), { maxItems: 8 }),
  /**
   * Whole cores the job holds on this node (all of them under --exclusive, none under
   * --share), of the node's allowed cores. Set by the controller, and by `rankd plan
   * --facts-dir`; absent in maps stored before it existed.
   */
  cores: Type.Optional(Type.Object({ held: Type.Integer({ minimum: 0 }), of: Type.Integer({ minimum: 0 }) })),
});
export type RankMapNode = Type.Static<typeof RankMapNode>;

export const RankMap = Type.Object({
  worldSize: Type.Integer({ minimum: 1 }),
  masterAddr: Type.String(),
  masterPort: Type.Integer({ minimum: 1, maximum: 65535 }),
  nodes: Type.Array(RankMapNode),
  ranks: Type.Array(RankEntry),
  /** Choices worth showing: fallbacks taken, GIDs that differ between ports, … */
  notes: Type.Array(Type.String()),
  /** Which CPUs-per-rank rule applied; absent in maps stored before it existed. */
  cpuPolicy: Type.Optional(RankCpuPolicy),
});
export type RankMap = Type.Static<typeof RankMap>;
