// The compact machine description the fixture builder turns into a sysfs/procfs tree.
//
// Only what a test cares about is required: packages × cores × threads. Everything else
// has a realistic default (one NUMA node per package, 16 GiB per node, split numbering,
// no cgroup restriction, no devices).

/**
 * How hyperthread siblings are numbered.
 * - `split`: the siblings of CPU i are i + P, i + 2P, … (bare-metal Intel/AMD);
 * - `adjacent`: the threads of one core are consecutive, 2k and 2k+1 (cloud VMs).
 */
export type Numbering = 'split' | 'adjacent';

export interface CgroupSpec {
  version: 1 | 2;
  /** The cgroup of the process, as /proc/self/cgroup names it. Default /rankd.slice/job. */
  path?: string;
  /** Allowed CPUs in list syntax ("0-3,8"); default every CPU. */
  cpus?: string;
  /** Allowed NUMA nodes in list syntax; default every node. */
  mems?: string;
  /**
   * Memory limits in bytes by cgroup path (the process's cgroup or an ancestor, "/" the
   * mount root): v2 memory.max and memory.high ('max' for none), v1 memory.limit_in_bytes
   * ('max' writes the kernel's "unlimited" number). v1 cgroups left out get that number too.
   */
  memory?: Record<string, { max?: number | 'max'; high?: number | 'max' }>;
  /**
   * v1 only: the devices cgroup's devices.list lines for the process's cgroup ("c 195:2 rw"),
   * as Slurm's ConstrainDevices writes them. Absent: no devices hierarchy at all.
   */
  devices?: string[];
}

export interface HugePagesSpec {
  sizeKb: number;
  /** Pages per NUMA node (or for the machine when there is no NUMA directory). */
  perNode: number;
  freePerNode?: number;
}

export interface CpulessNodeSpec {
  memKb?: number;
  /**
   * The PCI address of the NVIDIA GPU whose memory this node is (POWER9/Grace coherent
   * memory): the builder writes /proc/driver/nvidia/gpus/<bdf>/numa_status "Node: <id>".
   */
  nvidiaGpu?: string;
  /** NUMA nodes listed in access0/initiators (CXL/HBM), by node id. */
  initiators?: number[];
}

export interface NicSpec {
  name: string;
  mac?: string;
  mtu?: number;
  /** operstate; default "up". */
  state?: string;
  /** Mb/s; null writes no speed file (the kernel fails the read for links that are down). */
  speedMbps?: number | null;
  /** PCI address (0000:3b:00.0); null or absent makes a virtual device (lo, bridges, veth). */
  pci?: string | null;
  /** numa_node of the PCI device; -1 is what firmware without SRAT/_PXM locality reports. */
  numaNode?: number;
  /** ARPHRD type: 1 Ethernet (default), 32 InfiniBand (IPoIB). */
  type?: number;
  /** dev_port, which tells IPoIB children of a multi-port HCA apart. */
  devPort?: number;
}

/** One GID table entry; null is an empty slot (all zeros, no attributes). */
export type GidSpec = { gid: string; type?: 'IB/RoCE v1' | 'RoCE v2'; netdev?: string } | null;

export interface RdmaPortSpec {
  /** Port state name: ACTIVE, DOWN, INIT, ARMED. Default ACTIVE. */
  state?: string;
  /** Physical state name: LinkUp, Disabled, Polling. Default LinkUp. */
  physState?: string;
  linkLayer: 'InfiniBand' | 'Ethernet';
  /** As sysfs prints it: "200 Gb/sec (4X HDR)". */
  rate?: string;
  lid?: number;
  smLid?: number;
  lmc?: number;
  gids?: GidSpec[];
}

export interface RdmaDeviceSpec {
  name: string;
  /** PCI function of the HCA; shared with a NicSpec for RoCE/iWARP functions. */
  pci: string;
  /**
   * An auxiliary device between the PCI function and the RDMA device, as irdma has
   * (`ice.roce.0`): the class link then goes through it and it carries no numa_node.
   */
  auxDevice?: string;
  /** numa_node of the PCI function when no NicSpec already created it. */
  numaNode?: number;
  /** 16 hex digits; written with colons, as the kernel does. */
  nodeGuid: string;
  sysImageGuid?: string;
  /** node_type name: CA (InfiniBand/RoCE) or RNIC (iWARP). Default CA. */
  nodeType?: 'CA' | 'RNIC';
  fwVer?: string;
  hcaType?: string;
  boardId?: string;
  hwRev?: string;
  /** PCI vendor/device of the function when the builder creates it. */
  pciVendor?: string;
  pciDevice?: string;
  ports: RdmaPortSpec[];
}

export interface GpuSpec {
  pci: string;
  /** PCI vendor id; default 0x10de (NVIDIA). */
  vendor?: string;
  device?: string;
  /** PCI class; default 0x030200 (3D controller). */
  pciClass?: string;
  numaNode?: number;
  /** Written to /proc/driver/nvidia/gpus/<bdf>/information as "Model:". */
  model?: string;
  /** "GPU UUID:" of the same file; default GPU-00000000-0000-0000-0000-000000000000. */
  uuid?: string;
  /** "Device Minor:" of the same file (/dev/nvidiaN); default the GPU's place in the list. */
  minor?: number;
}

export interface MachineSpec {
  packages: number;
  coresPerPackage: number;
  threadsPerCore: number;
  /** Default `split`. */
  numbering?: Numbering;
  /** NUMA nodes per package (AMD NPS, Intel SNC). 0 writes no node directory at all. Default 1. */
  numaPerPackage?: number;
  /** CPU-less nodes (HBM, CXL, GPU memory), numbered after the CPU nodes. */
  cpulessNodes?: CpulessNodeSpec[];
  /** Full distance matrix in node order. Default 10 local, 12 same package, 21 remote, 31 CPU-less. */
  distances?: number[][];
  memPerNodeKb?: number;
  freePerNodeKb?: number;
  hugepages?: HugePagesSpec[];
  /** Offline CPUs: only `online` = 0 remains of them, as the kernel leaves it. */
  offline?: number[];
  cgroup?: CgroupSpec;
  /** Old kernel: masks only, no *_list files, no `online` files. */
  masksOnly?: boolean;
  /** Cache directories (L1d, L1i, L2 per core, L3 per package). Default true. */
  caches?: boolean;
  cpu?: { vendor?: string; family?: number; model?: number; modelName?: string };
  host?: { hostname?: string; kernel?: string; osPrettyName?: string; arch?: string };
  /** /proc/self/limits "Max locked memory" in bytes; 'unlimited' for -1. Default 8 MiB both. */
  memlock?: { soft: number | 'unlimited'; hard: number | 'unlimited' };
  /** CAP_SYS_RESOURCE in /proc/self/status CapEff (may raise hard limits). Default false. */
  capSysResource?: boolean;
  nics?: NicSpec[];
  rdma?: RdmaDeviceSpec[];
  gpus?: GpuSpec[];
  /** Files to create under the root (libfabric libraries and providers), e.g. /usr/lib64/libfabric.so.1. */
  files?: string[];
}
