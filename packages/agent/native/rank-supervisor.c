/*
 * rank-supervisor: rankd's per-rank supervisor and pinning launcher, in C.
 *
 *   rank-supervisor run  [--cpus LIST] [--mems LIST] RANKDIR CGROUP|- UID:GID:G1,G2|- CWD -- ARGV...
 *       The rank's environment arrives on stdin as NAME=VALUE\0 records. The agent reads
 *       one line on stdout: "started PID" or "failed CODE MESSAGE". RANKD_PASS_FD=N in the
 *       supervisor's own environment names an inherited descriptor (the rank's PMI socket)
 *       that the rank keeps and the supervisor closes after the fork. RANKD_STDIN_FD=N names
 *       one that becomes the rank's stdin (after the drop to the user), also closed here
 *       after the fork; without it the rank's stdin is /dev/null. supervise.c.
 *   rank-supervisor exec [--cpus LIST] [--mems LIST] RANKDIR CGROUP|- UID:GID:G1,G2|- CWD -- ARGV...
 *       PTY ranks, exec and shell: the parent (node-pty, or the agent) holds the process's
 *       stdio, so this only prepares the process and execs. The environment comes as
 *       NAME=VALUE\0 records in RANKDIR/env, which is read and deleted before anything
 *       else; this process's own environment is the agent's fixed one. prepare.c.
 *   rank-supervisor ompi-rank
 *       --mpi openmpi: what orted starts for each rank. It finds the rank's directory that
 *       the agent prepared, builds the rank's environment around Open MPI's own variables,
 *       and execs the run mode the agent wrote there, in its own place. ompi-rank.c.
 *   rank-supervisor rsh HOST ARG...
 *       --mpi openmpi: mpirun's remote shell (plm_rsh_agent). It hands HOST and the orted's
 *       arguments to the launcher node's agent over the job's Unix socket and exits with
 *       the daemon's status, as ssh would. rsh.c.
 *   rank-supervisor --version
 *       "rank-supervisor N", N from version.h.
 *
 * Why C: a supervisor must outlive the agent, tell an exit code from a signal exactly
 * (a shell cannot tell `exit 137` from SIGKILL) and cost little per rank (a Node.js one
 * would cost some 40 ms and 30 MB). Here the affinity and the memory policy are two
 * syscalls in the rank's own process, the program is exec'd directly (the rank's pid is
 * the process this supervisor forked), and nothing beyond libc is linked.
 *
 * Limits are inherited, never set here: the agent raises its own RLIMIT_MEMLOCK once
 * (memlock.ts) and every supervisor and rank gets it through fork and exec.
 */
#include "rank-supervisor.h"

#include <stdlib.h>

int main(int argc, char **argv)
{
	struct rs_args a;
	rs_parse_args(argc, argv, &a);
	if (a.mode == RS_OMPI_RANK)
		rs_ompi_rank();
	if (a.mode == RS_RSH)
		rs_rsh(a.argv);
	if (a.mode == RS_EXEC)
		return rs_exec(&a, rs_env_from_file(a.dir));
	return rs_run(&a);
}
