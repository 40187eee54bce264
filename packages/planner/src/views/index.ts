// Every way `rankd plan` can show a rank map.
import type { Facts, RankMap } from '@rankd/protocol';
import { renderBindings } from './bindings.js';
import { renderEnv } from './env.js';
import { renderHostfile } from './hostfile.js';
import { renderImpi } from './impi.js';
import { renderMachinefile } from './machinefile.js';
import { renderMatrix } from './matrix.js';
import { renderRankfile } from './rankfile.js';
import { renderTable } from './table.js';

export const RANK_MAP_FORMATS = [
  'table',
  'matrix',
  'bindings',
  'hostfile',
  'rankfile',
  'machinefile',
  'impi',
  'env',
  'json',
] as const;
export type RankMapFormat = (typeof RANK_MAP_FORMATS)[number];

/** What `rankd plan --help` adds to the names that do not say what they are. */
export const RANK_MAP_FORMAT_GLOSS: Partial<Record<RankMapFormat, string>> = {
  hostfile: 'Open MPI, DeepSpeed',
  rankfile: 'Open MPI',
  machinefile: 'hydra, host:N',
  impi: 'an mpiexec.hydra command with I_MPI_PIN_DOMAIN masks',
};

export function isRankMapFormat(value: string): value is RankMapFormat {
  return (RANK_MAP_FORMATS as readonly string[]).includes(value);
}

/** Renders a map; `facts` (by node name) lets `bindings` draw sockets and cores. */
export function renderRankMap(map: RankMap, format: RankMapFormat, facts?: Readonly<Record<string, Facts>>): string {
  switch (format) {
    case 'table':
      return renderTable(map);
    case 'matrix':
      return renderMatrix(map);
    case 'bindings':
      return renderBindings(map, facts);
    case 'hostfile':
      return renderHostfile(map);
    case 'rankfile':
      return renderRankfile(map);
    case 'machinefile':
      return renderMachinefile(map);
    case 'impi':
      return renderImpi(map);
    case 'env':
      return renderEnv(map);
    case 'json':
      return JSON.stringify(map, null, 2) + '\n';
  }
}

export { shellQuote } from './env.js';
export { connection } from './matrix.js';
