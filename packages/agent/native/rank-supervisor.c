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
 *   rank-supervisor --version
 *
 * Why C, when supervisor.pl did the job: each rank started behind two execs (perl, then
 * numactl or taskset) that cost some 10 ms of CPU per rank, and the memory binding
 * depended on numactl being installed. Here the affinity and the memory policy are two
 * syscalls in the rank's own process, the program is exec'd directly (the rank's pid is
 * the process this supervisor forked, as before), and nothing beyond libc is linked.
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
	if (a.mode == RS_EXEC)
		return rs_exec(&a, rs_env_from_file(a.dir));
	return rs_run(&a);
}
