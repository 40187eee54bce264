// GPUs and other accelerators from /sys/bus/pci/devices, by PCI vendor and class.
//
// - NVIDIA: vendor 0x10de with class 0x0300xx (VGA) or 0x0302xx (3D controller); the
//   model comes from /proc/driver/nvidia/gpus/<bdf>/information when the driver is loaded.
// - AMD (0x1002) and Intel (0x8086) data-center GPUs: class 0x0302xx or 0x0380xx (AMD
//   also 0x0300xx). Intel's 0x0300 is an integrated GPU and is left out.
// - Any vendor's processing accelerator: class 0x1200xx.
// A BMC's VGA (ASPEED, Matrox) is class 0x0300 from another vendor and is left out.
// `index` counts per vendor in PCI address order, as CUDA_DEVICE_ORDER=PCI_BUS_ID does.
//
// Every GPU on the bus is kept; those the reading process may not use are marked
// (gpu-visibility.ts): sysfs shows the whole machine to a Slurm job or a pod that was
// granted two of its eight GPUs.
import type { Facts, Gpu } from '@rankd/protocol';
import { readDeviceAccess } from './cgroup-devices.js';
import { applyVisibility, type GpuVisibilityInput } from './gpu-visibility.js';
import type { Sysfs } from './sysfs.js';

/** The character device major of /dev/nvidiaN, whose minor the driver page gives. */
const NVIDIA_MAJOR = 195;

export { gpuVisibilityFromEnv, type GpuVisibilityInput } from './gpu-visibility.js';

const PCI = '/sys/bus/pci/devices';
const VENDORS: Record<string, Gpu['vendor']> = { '0x10de': 'nvidia', '0x1002': 'amd', '0x8086': 'intel' };

function isAccelerator(vendor: Gpu['vendor'], cls: number): boolean {
  const sub = cls >> 8;
  if (sub === 0x1200) return true;
  if (vendor === 'nvidia') return sub === 0x0300 || sub === 0x0302;
  if (vendor === 'amd') return sub === 0x0300 || sub === 0x0302 || sub === 0x0380;
  if (vendor === 'intel') return sub === 0x0302 || sub === 0x0380;
  return false;
}

export function readGpus(
  sys: Sysfs,
  visibility: GpuVisibilityInput = {},
): { gpus: Gpu[]; gpuVisibility?: NonNullable<Facts['gpuVisibility']> } {
  const minors = new Map<string, number>();
  const gpus = listGpus(sys, minors);
  const access = gpus.some((g) => g.vendor === 'nvidia') ? readDeviceAccess(sys) : null;
  const devices = access && {
    source: `devices cgroup ${access.source}`,
    // a GPU whose minor is unknown (no driver page) cannot be shown to be allowed
    canOpen: (g: Gpu) => minors.has(g.pciAddress) && access.allowsChar(NVIDIA_MAJOR, minors.get(g.pciAddress)!),
  };
  return applyVisibility(gpus, visibility, devices ?? undefined);
}

function listGpus(sys: Sysfs, minors: Map<string, number>): Gpu[] {
  const found: Omit<Gpu, 'index'>[] = [];
  for (const bdf of (sys.entries(PCI, { optional: true }) ?? []).sort()) {
    const classText = sys.text(`${PCI}/${bdf}/class`, { optional: true });
    if (classText === null) continue;
    const cls = parseInt(classText, 16);
    const top = cls >> 16;
    if (top !== 0x03 && top !== 0x12) continue; // only display and accelerator classes read further
    const vendorId = (sys.text(`${PCI}/${bdf}/vendor`, { optional: true }) ?? '').toLowerCase();
    const vendor = VENDORS[vendorId] ?? 'other';
    if (!isAccelerator(vendor, cls)) continue;
    const node = sys.int(`${PCI}/${bdf}/numa_node`, { optional: true });
    const info = vendor === 'nvidia' ? nvidiaInformation(sys, bdf) : null;
    const uuid = info ? /^GPU UUID:\s*(\S+)/m.exec(info)?.[1] : undefined;
    const minor = info ? /^Device Minor:\s*(\d+)/m.exec(info)?.[1] : undefined;
    if (minor !== undefined) minors.set(bdf.toLowerCase(), Number(minor));
    found.push({
      pciAddress: bdf.toLowerCase(),
      vendor,
      vendorId,
      deviceId: (sys.text(`${PCI}/${bdf}/device`, { optional: true }) ?? '').toLowerCase(),
      pciClass: `0x${cls.toString(16).padStart(6, '0')}`,
      numaNode: node !== null && node >= 0 ? node : null,
      model: info ? (/^Model:\s*(.+)$/m.exec(info)?.[1]?.trim() ?? null) : null,
      ...(uuid ? { uuid: uuid.slice(0, 128) } : {}),
    });
  }
  const perVendor = new Map<string, number>();
  return found.map((g) => {
    const index = perVendor.get(g.vendor) ?? 0;
    perVendor.set(g.vendor, index + 1);
    return { ...g, index };
  });
}

/** The driver's page for the GPU; absent without the driver, or where a container runtime hides the GPU. */
function nvidiaInformation(sys: Sysfs, bdf: string): string | null {
  return sys.text(`/proc/driver/nvidia/gpus/${bdf}/information`, { optional: true });
}
