/*
 * ompi-rank mode: the program Open MPI's orted starts for every rank of an `--mpi openmpi`
 * job (mpirun is told to start `rank-supervisor ompi-rank` through a shell that expands
 * this node's RANKD_OMPI_SUPERVISOR: openmpi/mpirun.ts).
 *
 * orted forks it with Open MPI's environment (OMPI_COMM_WORLD_RANK, PMIX_*, …) on top of
 * the orted's own, which the node's agent set: RANKD_OMPI_JOB_DIR, this node's spool
 * directory of the job. In the rank's directory there, the agent left:
 *   ompi-exec       the run mode's argv (rank-supervisor run --cpus … RANKDIR CGROUP - CWD -- PROGRAM…),
 *                   NUL-separated
 *   ompi-inherited  what the rank inherits (the agent's PATH and locale, the submitter's
 *                   exported variables), NAME=VALUE\0 records (0600)
 *   ompi-env        the rank's planned environment, NAME=VALUE\0 records (0600)
 * This reads and deletes the three, and execs the run mode in its own place (same pid:
 * orted's child is the rank's supervisor), its stdin an anonymous file holding, lowest
 * first, the inherited variables, Open MPI's own OMPI_*, OPAL_* and PMIX_* (the program
 * needs them to join MPI_COMM_WORLD: a submitter's exported ones never replace them) and
 * the planned environment. From there on the rank is any rankd rank: pinned as planned,
 * output in the spool, exit.json, found and tracked by the agent through rank.json.
 *
 * The run mode starts with the agent's fixed environment, as the agent starts every
 * supervisor: nothing of the job's or Open MPI's environment (LD_PRELOAD, …) acts in it.
 * Anything wrong goes to stderr (orted hands it to mpirun) with exit 1.
 */
#include "rank-supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

/* The environment every supervisor starts with (the agent's HELPER_ENV, ranks/caller-env.ts). */
static char *const SUPERVISOR_ENV[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", NULL };

__attribute__((noreturn, format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
	va_list ap;
	fputs("rankd (ompi-rank): ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* OMPI_COMM_WORLD_RANK as the agent names rank directories: plain decimal, at most 8 digits. */
static const char *rank_of_env(void)
{
	const char *rank = getenv("OMPI_COMM_WORLD_RANK");
	if (!rank)
		fail("OMPI_COMM_WORLD_RANK is not set: not started by Open MPI");
	size_t n = strlen(rank);
	if (n == 0 || n > 8 || strspn(rank, "0123456789") != n || (rank[0] == '0' && n > 1))
		fail("OMPI_COMM_WORLD_RANK=\"%.32s\" is not a rank number", rank);
	return rank;
}

static void slurp(const char *dir, const char *name, struct rs_buf *b)
{
	char *file = rs_path(dir, name);
	if (rs_read_file(file, b) != 0)
		fail("%s: %s", file, strerror(errno));
	free(file);
}

/* "a\0b\0c" → {"a", "b", "c", NULL}, in place; empty fields inside are kept (an empty argument). */
static char **split_argv(struct rs_buf *b)
{
	size_t n = 1;
	for (size_t i = 0; i < b->len; i++)
		n += b->p[i] == '\0';
	char **argv = rs_alloc((n + 1) * sizeof(char *));
	size_t k = 0;
	for (char *p = b->p, *end = b->p + b->len; p <= end; p += strlen(p) + 1)
		argv[k++] = p;
	argv[k] = NULL;
	return argv;
}

static void add_records(struct rs_buf *out, char **env)
{
	for (size_t i = 0; env[i]; i++)
		rs_buf_add(out, env[i], strlen(env[i]) + 1);
}

/* Open MPI's own variables of this process, which the rank needs to join its job. */
static int open_mpi_own(const char *entry)
{
	return strncmp(entry, "OMPI_", 5) == 0 || strncmp(entry, "OPAL_", 5) == 0 || strncmp(entry, "PMIX_", 5) == 0;
}

/* The records on an anonymous file, rewound and made stdin: nothing of them is left on disk. */
static void records_as_stdin(const struct rs_buf *records)
{
	int fd = memfd_create("rankd-rank-env", MFD_CLOEXEC);
	if (fd < 0)
		fail("memfd_create: %s", strerror(errno));
	for (size_t off = 0; off < records->len;) {
		ssize_t w = write(fd, records->p + off, records->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			fail("the rank's environment: %s", strerror(errno));
		off += (size_t)w;
	}
	if (lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, STDIN_FILENO) < 0)
		fail("the rank's environment: %s", strerror(errno));
	close(fd);
}

void rs_ompi_rank(void)
{
	const char *rank = rank_of_env();
	const char *jobdir = getenv("RANKD_OMPI_JOB_DIR");
	if (!jobdir || !*jobdir)
		fail("RANKD_OMPI_JOB_DIR is not set: this orted was not started by a rankd agent");
	char *dir = rs_path(jobdir, rank);
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		fail("rank %s is not planned on this node (%s is missing): Open MPI mapped it elsewhere than rankd's rank map",
		     rank, dir);

	struct rs_buf exec = { 0 }, inherited = { 0 }, planned = { 0 };
	slurp(dir, "ompi-exec", &exec);
	if (exec.len == 0)
		fail("%s/ompi-exec is empty", dir);
	slurp(dir, "ompi-inherited", &inherited);
	slurp(dir, "ompi-env", &planned);
	/* read once: the values (a job's secrets among them) stay on disk no longer than this */
	static const char *const READ[] = { "ompi-exec", "ompi-inherited", "ompi-env" };
	for (size_t i = 0; i < sizeof READ / sizeof READ[0]; i++) {
		char *file = rs_path(dir, READ[i]);
		unlink(file);
		free(file);
	}

	/* lowest first: later records of a name replace earlier ones (env.c) */
	char **env = rs_env_from_records(inherited.p ? inherited.p : "", inherited.len);
	for (size_t i = 0; environ[i]; i++) {
		const char *eq = strchr(environ[i], '=');
		if (eq && open_mpi_own(environ[i])) {
			char *name = strndup(environ[i], (size_t)(eq - environ[i]));
			rs_env_set(&env, name, eq + 1);
			free(name);
		}
	}
	char **own = rs_env_from_records(planned.p ? planned.p : "", planned.len);
	for (size_t i = 0; own[i]; i++) {
		const char *eq = strchr(own[i], '=');
		char *name = strndup(own[i], (size_t)(eq - own[i]));
		rs_env_set(&env, name, eq + 1);
		free(name);
	}
	struct rs_buf records = { 0 };
	add_records(&records, env);
	records_as_stdin(&records);
	/* the run mode answers "started PID" to whoever started it; nobody here listens */
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
		fail("/dev/null: %s", strerror(errno));
	close(null);

	char **argv = split_argv(&exec);
	execve(argv[0], argv, SUPERVISOR_ENV);
	fail("%s: %s", argv[0], strerror(errno));
}
