// The Facts snapshot: what an agent knows about its node's hardware.
//
// Everything the planner decides rests on this shape, so it is strict about types
// (CPU and node sets are integer arrays, never strings) and explicit about the
// unknown: a field that could not be read is null and a warning says why.
import Type from 'typebox';
import { Nullable } from './nullable.js';

const Int = Type.Integer();
const IntList = Type.Array(Type.Integer({ minimum: 0 }), { maxItems: 65536 });
const Str = (maxLength = 4096) => Type.String({ maxLength });

export const TopologyCounts = Type.Object({
  packages: Type.Integer({ minimum: 0 }),
  numaNodes: Type.Integer({ minimum: 0 }),
  cores: Type.Integer({ minimum: 0 }),
  pus: Type.Integer({ minimum: 0 }),
});
export type TopologyCounts = Type.Static<typeof TopologyCounts>;

/** One physical core: the hardware threads that share it, grouped from sysfs siblings. */
export const Core = Type.Object({
  package: Int,
  /** core_id as sysfs gives it; only unique within a package. */
  coreId: Int,
  /** NUMA node of the core's first PU, -1 when unknown. */
  numaNode: Int,
  /** Online PUs of this core in sibling order, whether or not they are allowed. */
  pus: IntList,
});
export type Core = Type.Static<typeof Core>;

/** One online hardware thread as sysfs describes it. */
export const Pu = Type.Object({
  cpu: Type.Integer({ minimum: 0 }),
  /** physical_package_id, -1 when unknown. */
  package: Int,
  /** core_id, -1 when unknown. */
  coreId: Int,
  /** NUMA node holding this CPU, -1 when none does. */
  numaNode: Int,
  /** thread_siblings (core_cpus) as read for this CPU; empty when it has none. */
  threadSiblings: IntList,
  /** core_siblings (package_cpus) as read for this CPU; empty when it has none. */
  packageCpus: IntList,
});
export type Pu = Type.Static<typeof Pu>;

/**
 * An offline CPU whose topology folder the kernel kept: not a PU, yet lscpu numbers its
 * core and socket, so the logical ids of the CPUs after it depend on it.
 */
export const OfflinePu = Type.Object({
  cpu: Type.Integer({ minimum: 0 }),
  /** thread_siblings (core_cpus) as read for this CPU. */
  threadSiblings: IntList,
  /** core_siblings (package_cpus) as read for this CPU; empty when there is none. */
  packageCpus: IntList,
});
export type OfflinePu = Type.Static<typeof OfflinePu>;

/**
 * A run of consecutive /proc/cpuinfo entries that describe the same CPU model: a new
 * run starts where the vendor, model, model name or stepping changes (P and E cores of
 * big.LITTLE parts, mixed steppings). lscpu calls these CPU types and numbers cores and
 * sockets within each.
 */
export const CpuKind = Type.Object({
  /** vendor_id, vendor or CPU implementer. */
  vendor: Nullable(Str(256)),
  /** model, cpu model or CPU part. */
  model: Nullable(Str(256)),
  /** model name or cpu. */
  modelName: Nullable(Str(256)),
  /** stepping or CPU variant. */
  stepping: Nullable(Str(256)),
  /** The processors /proc/cpuinfo lists under this run. */
  cpus: IntList,
});
export type CpuKind = Type.Static<typeof CpuKind>;

/** The kernel's own CPU lists under /sys/devices/system/cpu, null where a file is absent. */
export const KernelCpuLists = Type.Object({
  possible: Nullable(IntList),
  present: Nullable(IntList),
  online: Nullable(IntList),
});
export type KernelCpuLists = Type.Static<typeof KernelCpuLists>;

export const Cache = Type.Object({
  level: Type.Integer({ minimum: 0 }),
  type: Type.Union([
    Type.Literal('Data'),
    Type.Literal('Instruction'),
    Type.Literal('Unified'),
    Type.Literal('unknown'),
  ]),
  /** The sysfs `id` of the instance, null on kernels that have none. */
  id: Nullable(Int),
  sizeKb: Nullable(Type.Integer({ minimum: 0 })),
  /** shared_cpu_map as read: empty where the kernel leaves it empty (old IA-64). */
  cpus: IntList,
});
export type Cache = Type.Static<typeof Cache>;

export const CpuFacts = Type.Object({
  /** Counts in the allowed view: what this process (and so its ranks) may use. */
  packages: Type.Integer({ minimum: 0 }),
  cores: Type.Integer({ minimum: 0 }),
  pus: Type.Integer({ minimum: 0 }),
  /** The same counts for the whole machine, ignoring cgroup/cpuset limits. */
  hardware: TopologyCounts,
  model: Nullable(Str()),
  online: IntList,
  offline: IntList,
  /** Online CPUs inside this process's cgroup cpuset. */
  allowed: IntList,
  /**
   * The cgroup the cpuset was read from, as kind:path ("cgroup1:/slurm/uid_1000/job_42"),
   * or null when no cpuset was found; absent in facts of agents older than the field.
   */
  cpusetCgroup: Type.Optional(Nullable(Str(1024))),
  /** Physical cores of the whole machine, ordered by (package, first PU). */
  coreList: Type.Array(Core, { maxItems: 65536 }),
  /** NUMA nodes in the allowed view (cpuset mems), GPU-memory nodes excluded as hwloc does. */
  numaNodes: Type.Optional(Type.Integer({ minimum: 0 })),
  /** Every online PU with what sysfs says of it, for tools that print per-CPU tables (lscpu -p). */
  puList: Type.Optional(Type.Array(Pu, { maxItems: 65536 })),
  /** Offline CPUs that still have a topology folder. */
  offlinePus: Type.Optional(Type.Array(OfflinePu, { maxItems: 65536 })),
  /**
   * Whether the legacy thread_siblings/core_siblings masks exist beside core_cpus and
   * package_cpus: lscpu reads only the legacy names and leaves Core and Socket empty without them.
   */
  legacySiblings: Type.Optional(Type.Boolean()),
  /** possible, present and online as the kernel lists them. */
  kernelLists: Type.Optional(KernelCpuLists),
  /** CPU models in /proc/cpuinfo order; empty when it names none. */
  kinds: Type.Optional(Type.Array(CpuKind, { maxItems: 65536 })),
  /**
   * CPU caches, each once, in the order they were found (by CPU, offline ones included,
   * then index; a CPU's indexes end at its first missing one).
   */
  caches: Type.Optional(Type.Array(Cache, { maxItems: 65536 })),
});
export type CpuFacts = Type.Static<typeof CpuFacts>;

export const HugePages = Type.Object({
  sizeKb: Type.Integer({ minimum: 0 }),
  total: Type.Integer({ minimum: 0 }),
  free: Type.Integer({ minimum: 0 }),
});
export type HugePages = Type.Static<typeof HugePages>;

export const NumaNode = Type.Object({
  id: Type.Integer({ minimum: 0 }),
  cpus: IntList,
  memTotalKb: Nullable(Type.Integer({ minimum: 0 })),
  memFreeKb: Nullable(Type.Integer({ minimum: 0 })),
  cpuless: Type.Boolean(),
  hugepages: Type.Array(HugePages, { maxItems: 16 }),
  /**
   * PCI address of the NVIDIA GPU whose coherent memory this node is (POWER9, Grace);
   * hwloc hides such nodes by default and rankd does not count them either.
   */
  gpuMemory: Type.Optional(Nullable(Str(32))),
});
export type NumaNode = Type.Static<typeof NumaNode>;

export const NumaFacts = Type.Object({
  nodes: Type.Array(NumaNode, { maxItems: 4096 }),
  /** distances[i][j] between nodes[i] and nodes[j]; empty when unknown. */
  distances: Type.Array(Type.Array(Int, { maxItems: 4096 }), { maxItems: 4096 }),
  /** Node ids this process may allocate from (its cgroup's cpuset mems). */
  allowed: Type.Optional(IntList),
  /**
   * True when the kernel shows no NUMA at all (no node folder) and the one node 0
   * holding every CPU is assumed, as libnuma and hwloc assume it.
   */
  assumed: Type.Optional(Type.Boolean()),
});
export type NumaFacts = Type.Static<typeof NumaFacts>;

/** A memlock limit in bytes; null means unlimited. */
const Limit = Nullable(Type.Integer({ minimum: 0 }));
export const MemlockFacts = Type.Object({
  agentSoft: Limit,
  agentHard: Limit,
  /** What a rank spawned by the agent will get: raised to the hard limit when allowed. */
  ranks: Limit,
});
export type MemlockFacts = Type.Static<typeof MemlockFacts>;

export const MemoryFacts = Type.Object({
  totalKb: Nullable(Type.Integer({ minimum: 0 })),
  availableKb: Nullable(Type.Integer({ minimum: 0 })),
  hugepages: Type.Array(HugePages, { maxItems: 16 }),
  memlock: MemlockFacts,
  /**
   * The memory cgroup's hard limit on this process and its ranks: the smallest of v2
   * memory.max (v1 memory.limit_in_bytes) over its cgroup and every ancestor, in kB; null
   * when none is set. Absent in facts of agents older than the field.
   */
  cgroupLimitKb: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
  /**
   * The smallest v2 memory.high over the same cgroups, where the kernel starts throttling
   * and reclaiming; null when none is set or on v1. Absent in facts of older agents.
   */
  cgroupHighKb: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
  /** The memory cgroup the limits were read from, as kind:path; null when none was found. */
  cgroupPath: Type.Optional(Nullable(Str(1024))),
});
export type MemoryFacts = Type.Static<typeof MemoryFacts>;

export const IpAddress = Type.Object({
  family: Type.Union([Type.Literal('inet'), Type.Literal('inet6')]),
  address: Str(64),
  prefixLength: Type.Integer({ minimum: 0, maximum: 128 }),
});
export type IpAddress = Type.Static<typeof IpAddress>;

export const Nic = Type.Object({
  name: Str(64),
  mac: Nullable(Str(64)),
  mtu: Nullable(Int),
  /** operstate: up, down, unknown, … */
  state: Str(32),
  speedMbps: Nullable(Int),
  pciAddress: Nullable(Str(32)),
  numaNode: Nullable(Int),
  /** The RDMA device this netdev belongs to, if any. */
  rdmaDevice: Nullable(Str(64)),
  /** Live addresses only: empty when read from a captured tree. */
  addresses: Type.Array(IpAddress, { maxItems: 256 }),
  virtual: Type.Boolean(),
});
export type Nic = Type.Static<typeof Nic>;

export const GidType = Type.Union([Type.Literal('IB/RoCE v1'), Type.Literal('RoCE v2'), Type.Literal('unknown')]);
export type GidType = Type.Static<typeof GidType>;

export const Gid = Type.Object({
  index: Type.Integer({ minimum: 0 }),
  /** Colon form as sysfs prints it: fe80:0000:…:0001. */
  gid: Str(64),
  type: GidType,
  netdev: Nullable(Str(64)),
  scope: Type.Union([Type.Literal('ipv4-mapped'), Type.Literal('link-local'), Type.Literal('global')]),
  /** The IPv4 address of an IPv4-mapped GID. */
  ipv4: Nullable(Str(16)),
});
export type Gid = Type.Static<typeof Gid>;

export const RdmaPort = Type.Object({
  port: Type.Integer({ minimum: 1 }),
  /** ibv_port_state name without the number: ACTIVE, DOWN, INIT, ARMED, … */
  state: Str(32),
  physState: Nullable(Str(64)),
  linkLayer: Type.Union([Type.Literal('InfiniBand'), Type.Literal('Ethernet'), Type.Literal('unknown')]),
  /** As sysfs prints it, e.g. "100 Gb/sec (4X EDR)". */
  rate: Nullable(Str(64)),
  lid: Nullable(Int),
  smLid: Nullable(Int),
  lmc: Nullable(Int),
  netdev: Nullable(Str(64)),
  /** Non-empty entries only. */
  gids: Type.Array(Gid, { maxItems: 4096 }),
  /** Entries in the GID table, empty ones included (ibv_devinfo's gid_tbl_len). */
  gidTableLength: Type.Optional(Type.Integer({ minimum: 0 })),
});
export type RdmaPort = Type.Static<typeof RdmaPort>;

export const RdmaDevice = Type.Object({
  name: Str(64),
  /** 16 lowercase hex digits, no colons. */
  nodeGuid: Nullable(Type.String({ pattern: '^[0-9a-f]{16}$' })),
  sysImageGuid: Nullable(Type.String({ pattern: '^[0-9a-f]{16}$' })),
  /** node_type as sysfs gives it, e.g. "1: CA". */
  nodeType: Nullable(Str(64)),
  transport: Type.Union([
    Type.Literal('InfiniBand'),
    Type.Literal('iWARP'),
    Type.Literal('usNIC'),
    Type.Literal('unknown'),
  ]),
  fwVersion: Nullable(Str(128)),
  hcaType: Nullable(Str(128)),
  boardId: Nullable(Str(128)),
  vendorId: Nullable(Str(16)),
  vendorPartId: Nullable(Str(16)),
  hwRev: Nullable(Str(32)),
  pciAddress: Nullable(Str(32)),
  numaNode: Nullable(Int),
  ports: Type.Array(RdmaPort, { maxItems: 256 }),
});
export type RdmaDevice = Type.Static<typeof RdmaDevice>;

export const Gpu = Type.Object({
  pciAddress: Str(32),
  vendor: Type.Union([Type.Literal('nvidia'), Type.Literal('amd'), Type.Literal('intel'), Type.Literal('other')]),
  vendorId: Str(16),
  deviceId: Str(16),
  /** PCI class code, e.g. 0x030200. */
  pciClass: Str(16),
  numaNode: Nullable(Int),
  model: Nullable(Str(256)),
  /** Order among GPUs of the node by PCI address, as CUDA_DEVICE_ORDER=PCI_BUS_ID counts. */
  index: Type.Integer({ minimum: 0 }),
  /** The driver's UUID (GPU-…), from /proc/driver/nvidia/gpus/<bdf>/information; absent when unknown. */
  uuid: Type.Optional(Str(128)),
  /**
   * Whether this process (and so its ranks) may use the GPU: false when its devices cgroup
   * (v1) or the agent's CUDA_VISIBLE_DEVICES or NVIDIA_VISIBLE_DEVICES (a Slurm allocation,
   * a pod's device plugin) leaves it out. Absent means allowed (none of these restricts, or
   * an older agent).
   */
  allowed: Type.Optional(Type.Boolean()),
});
export type Gpu = Type.Static<typeof Gpu>;

/** What restricted the GPUs: the devices cgroup, and the variables the agent had when it started. */
export const GpuVisibility = Type.Object({
  /**
   * In the order they were applied: "devices cgroup cgroup1:/slurm/uid_1000/job_7" (cgroup
   * v1 devices.list), then name=value pairs, e.g. ["CUDA_VISIBLE_DEVICES=1"].
   */
  from: Type.Array(Str(4096), { maxItems: 4 }),
  /** Entries of the lists that name no GPU of the node (an unknown UUID, an index past the end). */
  unmatched: Type.Array(Str(256), { maxItems: 256 }),
});
export type GpuVisibility = Type.Static<typeof GpuVisibility>;

export const FactsWarning = Type.Object({
  code: Str(64),
  message: Str(1024),
  path: Type.Optional(Str(1024)),
});
export type FactsWarning = Type.Static<typeof FactsWarning>;

export const Facts = Type.Object({
  schemaVersion: Type.Literal(1),
  collectedAt: Str(64),
  /** The filesystem root the facts were read under ("/" for the live system). */
  root: Str(1024),
  host: Type.Object({
    hostname: Nullable(Str(256)),
    kernel: Nullable(Str(256)),
    os: Nullable(Str(256)),
    arch: Nullable(Str(64)),
  }),
  cpu: CpuFacts,
  numa: NumaFacts,
  memory: MemoryFacts,
  nics: Type.Array(Nic, { maxItems: 1024 }),
  rdma: Type.Object({
    devices: Type.Array(RdmaDevice, { maxItems: 1024 }),
    /**
     * The kernel's uverbs ABI (/sys/class/infiniband_verbs/abi_version); null when the kernel
     * offers no verbs, where libibverbs lists no devices at all ("Function not implemented").
     * Absent in facts of agents older than the field.
     */
    verbsAbi: Type.Optional(Nullable(Type.Integer())),
  }),
  gpus: Type.Array(Gpu, { maxItems: 256 }),
  /** Set when a variable restricted the GPUs (see Gpu.allowed); absent otherwise and in older agents. */
  gpuVisibility: Type.Optional(GpuVisibility),
  fabric: Type.Object({
    /** libfabric shared objects found (paths). */
    libfabric: Type.Array(Str(), { maxItems: 64 }),
    /** PSM3 provider objects found (paths). */
    psm3: Type.Array(Str(), { maxItems: 64 }),
  }),
  warnings: Type.Array(FactsWarning, { maxItems: 1024 }),
});
export type Facts = Type.Static<typeof Facts>;
