// mpirun's command line and environment as rank 0's node runs it for an `--mpi openmpi`
// job: its daemons come through rankd's rsh helper, its rank map is rankd's, its binding
// is none (rankd pins each rank), and what it starts on each node is that node's rank
// supervisor in ompi-rank mode, which becomes the supervisor its agent prepared for the rank.
import { findTool } from '../ranks/program.js';

export interface MpirunCommand {
  /** One line per rank, its node's host name: rank R on line R. */
  hostfile: string;
  ranks: number;
  /** This node's rank supervisor, whose rsh mode is mpirun's remote shell. */
  supervisor: string;
  asRoot: boolean;
}

/** Debian's mpirun of Open MPI; throws when it is not installed. */
export function findMpirun(): string {
  const mpirun = findTool('mpirun.openmpi');
  if (!mpirun) throw new Error('mpirun.openmpi is not installed on the launcher node (Debian: openmpi-bin)');
  return mpirun;
}

/** Open MPI's daemon, from this node's own tool path (never a path another node named); throws when it is not installed. */
export function findOrted(): string {
  const orted = findTool('orted');
  if (!orted) throw new Error('orted is not installed on this node (Debian: openmpi-bin)');
  return orted;
}

export function mpirunArgv(mpirun: string, c: MpirunCommand): string[] {
  return [
    mpirun,
    ...(c.asRoot ? ['--allow-run-as-root'] : []),
    // the daemons come through rankd, each started from mpirun, each staying attached
    // (no --daemonize): the helper's exit is the daemon's
    // Open MPI splits the agent on spaces into its argv: `rank-supervisor rsh HOST …`
    '--mca',
    'plm_rsh_agent',
    `${c.supervisor} rsh`,
    '--mca',
    'plm_rsh_no_tree_spawn',
    '1',
    '--mca',
    'orte_leave_session_attached',
    '1',
    // rank R on line R of the hostfile: rankd's rank map, node for node; no binding by
    // Open MPI (rankd's supervisor pins each rank, and the binding check proves it)
    '--hostfile',
    c.hostfile,
    '--mca',
    'rmaps',
    'seq',
    '--bind-to',
    'none',
    '-np',
    String(c.ranks),
    // each node's own supervisor, which its agent names in the orted's environment
    '/bin/sh',
    '-c',
    'exec "$RANKD_OMPI_SUPERVISOR" ompi-rank',
  ];
}

/** Of the job's environment, mpirun gets Open MPI's own settings: `--env OMPI_MCA_…` tunes mpirun and (forwarded by it) the orteds. */
export function openMpiSettings(env: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (/^(OMPI_|OPAL_|PMIX_)/.test(k)) out[k] = v;
  return out;
}
