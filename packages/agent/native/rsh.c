/*
 * rsh mode: rankd's remote shell for Open MPI's mpirun (`--mca plm_rsh_agent
 * "rank-supervisor rsh"` of an `--mpi openmpi` job).
 *
 * mpirun runs `AGENT HOST ARGS…`, the orted's command line. Instead of a remote shell this
 * hands the arguments, one by one, to the launcher node's rankd agent, over the job's Unix
 * socket (RANKD_OMPI_SOCKET, in the agent's spool: only the job's user reaches it). That
 * agent keeps only the launch's values from them (protocol orted-launch.ts), and the
 * controller has HOST's agent start its own orted with them, as part of the job: nothing
 * here is run as a command. It stays until that daemon ends and exits with its status, as
 * ssh would: mpirun takes a non-zero exit for a daemon that failed.
 *
 * Protocol (openmpi/rsh-socket.ts): one line out, `HOST\tARG\tARG…` (a tab or newline in
 * any is refused); lines back: `started PID`, then `exit CODE` or `failed MESSAGE`.
 * Anything wrong exits 255, ssh's status for its own failures.
 */
#include "rank-supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

__attribute__((noreturn, format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
	va_list ap;
	fputs("rankd (rsh helper): ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(255);
}

static int connect_to(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof addr.sun_path)
		fail("%s: %s", path, strerror(ENAMETOOLONG));
	strcpy(addr.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		fail("socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
		fail("%s: %s", path, strerror(errno));
	return fd;
}

static void send_all(int fd, const char *path, const struct rs_buf *b)
{
	for (size_t off = 0; off < b->len;) {
		/* MSG_NOSIGNAL: an agent that went away is an error to report, not a SIGPIPE */
		ssize_t w = send(fd, b->p + off, b->len - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			fail("%s: %s", path, strerror(errno));
		off += (size_t)w;
	}
}

/* One line from the agent: the daemon's end ends this process; anything else is news only. */
static void on_line(const char *line, const char *host)
{
	if (strncmp(line, "exit ", 5) == 0 && line[5] && strspn(line + 5, "0123456789") == strlen(line + 5)) {
		/* a status past 255 (or too long to parse) is a failure all the same */
		long code = strlen(line + 5) > 9 ? 255 : strtol(line + 5, NULL, 10);
		exit(code > 255 ? 255 : (int)code);
	}
	if (strncmp(line, "failed ", 7) == 0)
		fail("daemon on %s: %s", host, line + 7);
}

void rs_rsh(char **argv)
{
	if (!argv[0] || !argv[1])
		fail("usage: rank-supervisor rsh HOST ARG...");
	for (char **a = argv; *a; a++)
		if (strpbrk(*a, "\t\n"))
			fail("a host or argument with a tab or newline");
	const char *host = argv[0];
	const char *path = getenv("RANKD_OMPI_SOCKET");
	if (!path || !*path)
		fail("RANKD_OMPI_SOCKET is not set: not run by a rankd launcher");
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null >= 0 && null != STDIN_FILENO) {
		dup2(null, STDIN_FILENO);
		close(null);
	}
	int fd = connect_to(path);
	struct rs_buf request = { 0 };
	for (char **a = argv; *a; a++) {
		if (a != argv)
			rs_buf_lit(&request, "\t");
		rs_buf_add(&request, *a, strlen(*a));
	}
	rs_buf_lit(&request, "\n");
	send_all(fd, path, &request);

	struct rs_buf in = { 0 };
	char chunk[4096];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		rs_buf_add(&in, chunk, (size_t)n);
		char *nl;
		while ((nl = memchr(in.p, '\n', in.len)) != NULL) {
			*nl = '\0';
			on_line(in.p, host);
			size_t rest = in.len - (size_t)(nl + 1 - in.p);
			memmove(in.p, nl + 1, rest + 1);
			in.len = rest;
		}
	}
	fail("the rankd agent closed the connection before the daemon on %s ended", host);
}
