// `lscpu -p`, util-linux's "compatible" parsable format, from facts:
//
//   # The following is the parsable format, which can be fed to other
//   # programs. Each different item in every column has an unique ID
//   # starting usually from zero.
//   # CPU,Core,Socket,Node,,L1d,L1i,L2,L3
//   0,0,0,0,,0,0,0,0
//
// The first three lines are lscpu's untranslated text (a translated locale changes them;
// rankd prints the C locale's). The cache columns follow two commas and appear only when
// there is a cache; a CPU without some cache has no cell for it rather than an empty one,
// so its row is shorter. Which ids go in the cells is lscpu-ids.ts's job.
//
// lscpu on a live aarch64 machine without an ACPI PPTT table heads the third column
// "Cluster" instead of "Socket"; rankd always prints "Socket".
import type { Facts } from '@rankd/protocol';
import { lscpuTable } from './lscpu-ids.js';

const PREAMBLE =
  '# The following is the parsable format, which can be fed to other\n' +
  '# programs. Each different item in every column has an unique ID\n' +
  '# starting usually from zero.\n';

const cell = (n: number | null) => (n === null ? '' : String(n));

export function renderLscpu(facts: Facts): string {
  const { cacheNames, rows } = lscpuTable(facts);
  const withCaches = cacheNames.length > 0;
  let out = PREAMBLE + '# CPU,Core,Socket,Node' + (withCaches ? `,,${cacheNames.join(',')}` : '') + '\n';
  for (const r of rows) {
    // a CPU of no known type: lscpu prints every cell empty, its number too
    out += r.typed ? [String(r.cpu), cell(r.core), cell(r.socket), cell(r.node)].join(',') : ',,,';
    if (withCaches) out += ',,' + r.caches.join(',');
    out += '\n';
  }
  return out;
}
