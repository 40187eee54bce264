// Where the files of an Open MPI job are on a node, beside what ranks/spool.ts keeps for
// its ranks: the directories of its launcher and daemons and the rsh helper's socket, in
// the spool under a name no job id can have.
import fs from 'node:fs';
import path from 'node:path';

/** The launcher's and daemons' own files live beside the jobs, under a name no job id can have. */
const OMPI_DIR = '.openmpi';

/** <spool>/.openmpi/<jobId>: removed whole once the job has nothing left here (rank dirs go with job.release). */
export function jobOmpiDir(spoolRoot: string, jobId: string): string {
  return path.join(spoolRoot, OMPI_DIR, jobId);
}

export const ompiFiles = {
  launcherDir: (jobDir: string) => path.join(jobDir, 'launcher'),
  daemonDir: (jobDir: string, daemon: number) => path.join(jobDir, `daemon-${daemon}`),
  rshSocket: (jobDir: string) => path.join(jobDir, 'rsh.sock'),
};

/**
 * A private TMPDIR for mpirun or an orted, in its own directory: Open MPI puts its session
 * directory (`ompi.<hostname>.<uid>/jf.<job family>/…`) under TMPDIR, and the same path
 * under a shared /tmp, for nodes of one hostname (containers, namespaces), had daemons of a
 * job remove each other's directories ("orte_session_dir failed") or crash at start.
 */
export function privateTmpdir(processDir: string): string {
  const tmp = path.join(processDir, 'tmp');
  fs.mkdirSync(tmp, { mode: 0o700 });
  return tmp;
}

/** A file only the agent's user may read (the job's user: --mpi openmpi runs as the agent's own). */
export function writePrivate(file: string, content: string | Buffer): void {
  fs.writeFileSync(file, content, { mode: 0o600 });
}
