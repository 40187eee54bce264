// libfabric and its PSM3 provider, where the seeds look for them
// (/usr/lib64/libfabric.so.*, /usr/lib64/libfabric/libpsm3-fi.so) and where
// distributions and vendor stacks put them. Only fixed names are stat'ed: listing
// /usr/lib would cost more than the rest of the snapshot.
import type { Sysfs } from './sysfs.js';

const LIB_DIRS = [
  '/usr/lib64',
  '/usr/lib',
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/usr/local/lib',
  '/usr/local/lib64',
  '/opt/amazon/efa/lib64',
  '/opt/amazon/efa/lib',
];

export interface FabricFacts {
  libfabric: string[];
  psm3: string[];
}

export function readFabric(sys: Sysfs): FabricFacts {
  const libfabric: string[] = [];
  const psm3: string[] = [];
  for (const dir of LIB_DIRS) {
    for (const name of ['libfabric.so.1', 'libfabric.so']) {
      if (sys.exists(`${dir}/${name}`)) {
        libfabric.push(`${dir}/${name}`);
        break;
      }
    }
    for (const provider of [`${dir}/libfabric/libpsm3-fi.so`, `${dir}/libpsm3-fi.so`]) {
      if (sys.exists(provider)) psm3.push(provider);
    }
  }
  return { libfabric, psm3 };
}
