/*
 * Everything the rank's own process needs before it execs the program: its cgroup, its
 * CPU affinity and memory policy, its user, its cwd and its environment. Runs in the
 * forked child (run mode) or in place (exec mode, PTY ranks). A failure never returns:
 * in run mode it goes to the supervisor on the report pipe as "CODE MESSAGE", in exec
 * mode to the terminal as "rankd: CODE MESSAGE"; either way with exit 127, as exec's.
 */
#include "rank-supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* set_mempolicy(2)'s mode; the raw syscall, so that no libnuma is needed */
#define RS_MPOL_BIND 2

extern char **environ;

static int report_fd = -1;

void rs_fail_to(int fd)
{
	report_fd = fd;
}

void rs_fail(const char *code, const char *fmt, ...)
{
	struct rs_buf b = { 0 };
	char message[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	if (report_fd >= 0) {
		rs_buf_printf(&b, "%s %s", code, message);
		/* one write: the supervisor reads to EOF, which comes with our exit */
		ssize_t ignored = write(report_fd, b.p, b.len);
		(void)ignored;
		_exit(127);
	}
	fprintf(stderr, "rankd: %s %s\n", code, message);
	exit(127);
}

/* Joined before dropping root: only root may write the agent's cgroup.procs. */
static void join_cgroup(const char *cgroup)
{
	char *procs = rs_path(cgroup, "cgroup.procs");
	int fd = open(procs, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		rs_fail("RANKD_RANK_CGROUP", "%s: %s", cgroup, strerror(errno));
	char pid[32];
	int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
	if (write(fd, pid, (size_t)n) != n || close(fd) != 0)
		rs_fail("RANKD_RANK_CGROUP", "%s: %s", procs, strerror(errno));
	free(procs);
}

/*
 * After the cgroup: entering a cpuset cgroup resets the task's affinity to the cpuset's
 * CPUs and rebinds its memory policy, so pinning first would be undone. Both calls act on
 * this process alone and need no privilege; the exec keeps both. A partial overlap with
 * the cpuset is no error for the kernel (it narrows the mask): the agent's binding check
 * reads Cpus_allowed_list back and reports the mismatch.
 */
static void pin(const struct rs_args *a)
{
	if (a->cpus && sched_setaffinity(0, a->cpus_size, a->cpus) != 0)
		rs_fail("RANKD_RANK_PINNING", "sched_setaffinity to CPUs %s: %s", a->cpus_text, strerror(errno));
	if (a->mems && syscall(SYS_set_mempolicy, RS_MPOL_BIND, a->mems, a->mems_maxnode) != 0)
		rs_fail("RANKD_RANK_PINNING", "set_mempolicy(MPOL_BIND) to NUMA nodes %s: %s", a->mems_text, strerror(errno));
}

static int cmp_gid(const void *x, const void *y)
{
	gid_t a = *(const gid_t *)x, b = *(const gid_t *)y;
	return a < b ? -1 : a > b;
}

/* Sorted, unique, space-separated: the form both sides of the groups check are compared in. */
static void group_list(struct rs_buf *out, gid_t *ids, size_t n)
{
	qsort(ids, n, sizeof *ids, cmp_gid);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || ids[i] != ids[i - 1])
			rs_buf_printf(out, "%s%u", out->len ? " " : "", (unsigned)ids[i]);
}

/* The value of "Name:\t…" in /proc/self/status, up to the end of its line. */
static const char *status_field(const char *status, const char *name, size_t *len)
{
	size_t n = strlen(name);
	for (const char *line = status; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (strncmp(line, name, n) == 0 && line[n] == ':') {
			const char *v = line + n + 1;
			v += strspn(v, " \t");
			*len = strcspn(v, "\n");
			return v;
		}
	}
	*len = 0;
	return "";
}

/*
 * Groups first, then gids, then uids, each real, effective and saved at once, so no way
 * back to root remains. The kernel's view is the proof: the calls'
 * own results are not trusted to cover every case (an LSM, a user namespace).
 */
static void switch_user(const struct rs_args *a)
{
	int ignored = setgroups(a->ngroups, a->groups);
	ignored |= setresgid(a->gid, a->gid, a->gid);
	ignored |= setresuid(a->uid, a->uid, a->uid);
	(void)ignored;
	struct rs_buf status = { 0 }, want_u = { 0 }, want_g = { 0 }, want_groups = { 0 }, have_groups = { 0 };
	rs_read_file("/proc/self/status", &status);
	const char *text = status.p ? status.p : "";
	size_t ul, gl, gsl;
	const char *u = status_field(text, "Uid", &ul), *g = status_field(text, "Gid", &gl), *gs = status_field(text, "Groups", &gsl);
	rs_buf_printf(&want_u, "%u\t%u\t%u\t%u", (unsigned)a->uid, (unsigned)a->uid, (unsigned)a->uid, (unsigned)a->uid);
	rs_buf_printf(&want_g, "%u\t%u\t%u\t%u", (unsigned)a->gid, (unsigned)a->gid, (unsigned)a->gid, (unsigned)a->gid);
	group_list(&want_groups, a->groups, a->ngroups);
	gid_t *have = rs_alloc((gsl / 2 + 1) * sizeof(gid_t));
	size_t nhave = 0;
	for (const char *p = gs; p < gs + gsl;) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);
		if (end == p)
			break;
		have[nhave++] = (gid_t)v;
		p = end + strspn(end, " \t");
	}
	group_list(&have_groups, have, nhave);
	int same = ul == want_u.len && strncmp(u, want_u.p, ul) == 0 && gl == want_g.len && strncmp(g, want_g.p, gl) == 0 &&
		   strcmp(have_groups.p ? have_groups.p : "", want_groups.p ? want_groups.p : "") == 0;
	if (!same)
		rs_fail("RANKD_RANK_USER_SWITCH", "could not become uid %u gid %u groups %s (now Uid %.*s Gid %.*s Groups %s)", (unsigned)a->uid,
			(unsigned)a->gid, want_groups.p ? want_groups.p : "", (int)ul, u, (int)gl, g, have_groups.p ? have_groups.p : "");
}

void rs_prepare(const struct rs_args *a, char ***env)
{
	if (a->cgroup)
		join_cgroup(a->cgroup);
	pin(a);
	if (a->switch_user)
		switch_user(a);
	if (chdir(a->cwd) != 0)
		rs_fail("RANKD_RANK_BAD_CWD", "%s: %s", a->cwd, strerror(errno));
	rs_env_set(env, "PWD", a->cwd);
}

/* The code of a failed execvp, for the status a shell gives it (errors.ts, shellStatusOf): only
 * ENOENT is "not there" (127); any other errno means it is there and cannot be run (126), as in bash. */
const char *rs_exec_failure(int e)
{
	return e == ENOENT ? "RANKD_RANK_PROGRAM_NOT_FOUND" : "RANKD_RANK_PROGRAM_NOT_EXECUTABLE";
}

/* Why execvp failed, in a shell's words: "FILE: strerror". ENOENT for a file that is there
 * means its #! interpreter is not: that line names it, as bash 4 and srun do. The file is read
 * as the rank's user (after the switch), never as root. */
void rs_exec_words(const char *file, int e, char *out, size_t size)
{
	int fd = e == ENOENT && strchr(file, '/') ? open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK) : -1;
	if (fd >= 0) {
		char head[256];
		ssize_t n = read(fd, head, sizeof head - 1);
		close(fd);
		if (n >= 2 && head[0] == '#' && head[1] == '!') {
			head[n] = 0;
			const char *interpreter = head + 2 + strspn(head + 2, " \t");
			int len = (int)strcspn(interpreter, " \t\r\n");
			snprintf(out, size, "%s: %.*s: bad interpreter: %s", file, len, interpreter, strerror(e));
			return;
		}
	}
	snprintf(out, size, "%s: %s", file, strerror(e));
}

/* Exec mode: node-pty's child becomes the rank in place (node-pty already made it a session leader). */
int rs_exec(const struct rs_args *a, char **env)
{
	rs_prepare(a, &env);
	/* execvp searches the PATH of environ: the rank's, as it would in the program's own shell */
	environ = env;
	execvp(a->argv[0], a->argv);
	int e = errno;
	char words[8192];
	rs_exec_words(a->argv[0], e, words, sizeof words);
	fprintf(stderr, "rankd: %s %s\n", rs_exec_failure(e), words);
	return e == ENOENT ? 127 : 126;
}
