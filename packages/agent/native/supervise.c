/*
 * Run mode: the rank's parent for its whole life, outliving the agent that started it.
 *
 * The rank's exit status can only be collected by its parent, and the agent must be
 * restartable (SIGKILL included) while ranks run; so the parent is this process, which
 * the agent spawns in a session of its own and which records the exit in exit.json,
 * where a restarted agent finds it. Steps and files (docs/ranks.md):
 * supervisor.log takes our stderr, the environment arrives on stdin, the child reports a
 * failed setup on a close-on-exec pipe, rank.json is written before the agent is told
 * "started PID", and exit.json only once nothing of the rank is left.
 */
#include "rank-supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The signals whoever signals the supervisor means for the rank. */
static const int FORWARDED[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
#define NFORWARDED (sizeof FORWARDED / sizeof FORWARDED[0])

/* Set in the parent only, after the fork: 0 means there is no rank to forward to. */
static volatile pid_t rank_pgid;

static void forward(int sig)
{
	int saved = errno;
	if (rank_pgid > 1)
		kill(-rank_pgid, sig);
	errno = saved;
}

static void answer(const char *line)
{
	size_t n = strlen(line);
	while (n > 0) {
		ssize_t w = write(STDOUT_FILENO, line, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* the agent may be gone (SIGPIPE is ignored): nobody to tell */
		line += w;
		n -= (size_t)w;
	}
}

static void write_failed(const char *dir, const char *code, const char *message)
{
	struct rs_buf json = { 0 };
	rs_buf_lit(&json, "{\"code\":null,\"signal\":null,\"failed\":{\"code\":");
	rs_buf_json_str(&json, code);
	rs_buf_lit(&json, ",\"message\":");
	rs_buf_json_str(&json, message);
	rs_buf_lit(&json, "}}");
	char *file = rs_path(dir, "exit.json");
	rs_write_record(file, json.p);
	free(file);
	free(json.p);
}

/* "failed CODE MESSAGE" to the agent, the record too unless already written; then the supervisor is done. */
__attribute__((noreturn)) static void answer_failed(const char *dir, const char *code, const char *message, int recorded)
{
	/* one line for the agent: runs of CR and LF become one space */
	struct rs_buf m = { 0 };
	for (const char *p = message; *p;) {
		size_t run = strspn(p, "\r\n");
		if (run) {
			rs_buf_lit(&m, " ");
			p += run;
		} else {
			rs_buf_add(&m, p, 1);
			p++;
		}
	}
	const char *clean = m.p ? m.p : "";
	if (!recorded)
		write_failed(dir, code, clean);
	struct rs_buf line = { 0 };
	rs_buf_printf(&line, "failed %s %s\n", code, clean);
	answer(line.p);
	exit(0);
}

static void reopen(int fd, const char *file, int flags)
{
	int f = open(file, flags, 0666);
	if (f < 0 || f == fd)
		return;
	dup2(f, fd);
	close(f);
}

static int open_output(const char *dir, const char *name)
{
	char *file = rs_path(dir, name);
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		char message[4200];
		snprintf(message, sizeof message, "%s: %s", file, strerror(errno));
		answer_failed(dir, "RANKD_RANK_SPAWN_FAILED", message, 0);
	}
	free(file);
	return fd;
}

__attribute__((noreturn)) static void child(const struct rs_args *a, char **env, int in, int out, int err, int report, const sigset_t *mask)
{
	rs_fail_to(report);
	/* an ignored signal or a blocked one would survive the exec into the rank */
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	/* the rank's own session and process group: its pgid is its pid */
	if (setsid() != getpid())
		rs_fail("RANKD_RANK_SPAWN_FAILED", "setsid: %s", strerror(errno));
	rs_prepare(a, &env);
	/* the job's stdin, installed as the rank's only after the drop, as its output files are */
	if (in >= 0) {
		if (dup2(in, STDIN_FILENO) < 0)
			rs_fail("RANKD_RANK_SPAWN_FAILED", "stdin: %s", strerror(errno));
		close(in);
	}
	if (dup2(out, STDOUT_FILENO) < 0)
		rs_fail("RANKD_RANK_SPAWN_FAILED", "stdout: %s", strerror(errno));
	if (dup2(err, STDERR_FILENO) < 0)
		rs_fail("RANKD_RANK_SPAWN_FAILED", "stderr: %s", strerror(errno));
	environ = env;
	execvp(a->argv[0], a->argv);
	int e = errno;
	char words[8192];
	rs_exec_words(a->argv[0], e, words, sizeof words);
	rs_fail(rs_exec_failure(e), "%s", words);
}

/* A socket passed to the rank (PMI_FD): only the rank may hold it, so that its other end sees EOF when the rank is gone. */
static void close_passed_fd(void)
{
	const char *v = getenv("RANKD_PASS_FD");
	if (!v || !*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 6)
		return;
	int fd = atoi(v);
	if (fd > STDERR_FILENO && fcntl(fd, F_GETFD) >= 0)
		close(fd);
}

/*
 * RANKD_STDIN_FD=N: an inherited socket the agent writes the job's stdin into. It becomes
 * the rank's stdin, and only the rank holds it (we close our copy after the fork), so that
 * the agent's writes fail once the rank is gone. -1 without one: the rank reads /dev/null.
 */
static int stdin_fd(const char *dir)
{
	const char *v = getenv("RANKD_STDIN_FD");
	if (!v)
		return -1;
	int fd = (*v && strspn(v, "0123456789") == strlen(v) && strlen(v) <= 6) ? atoi(v) : -1;
	if (fd <= STDERR_FILENO || fcntl(fd, F_GETFD) < 0) {
		char message[128];
		snprintf(message, sizeof message, "RANKD_STDIN_FD=%.16s is not an open descriptor above 2", v);
		answer_failed(dir, "RANKD_RANK_SPAWN_FAILED", message, 0);
	}
	return fd;
}

static void write_rank_record(const struct rs_args *a, pid_t pid)
{
	struct rs_buf json = { 0 };
	rs_buf_printf(&json, "{\"pid\":%d,\"pgid\":%d,\"supervisorPid\":%d,\"supervisorStartTicks\":", (int)pid, (int)pid, (int)getpid());
	rs_start_ticks(&json);
	rs_buf_lit(&json, ",\"cgroup\":");
	if (a->cgroup)
		rs_buf_json_str(&json, a->cgroup);
	else
		rs_buf_lit(&json, "null");
	rs_buf_lit(&json, ",\"pty\":false}");
	char *file = rs_path(a->dir, "rank.json");
	rs_write_record(file, json.p);
	free(file);
	free(json.p);
}

static void write_exit_record(const char *dir, int status, int clean)
{
	struct rs_buf json = { 0 };
	if (WIFSIGNALED(status))
		rs_buf_printf(&json, "{\"code\":null,\"signal\":%d,", WTERMSIG(status));
	else
		rs_buf_printf(&json, "{\"code\":%d,\"signal\":null,", WEXITSTATUS(status));
	rs_buf_printf(&json, "\"core\":%s,\"leftover\":%s}", WCOREDUMP(status) ? "true" : "false", clean ? "false" : "true");
	char *file = rs_path(dir, "exit.json");
	rs_write_record(file, json.p);
	free(file);
	free(json.p);
}

int rs_run(const struct rs_args *a)
{
	signal(SIGPIPE, SIG_IGN); /* the agent may be gone when we answer it */
	char *log = rs_path(a->dir, "supervisor.log");
	reopen(STDERR_FILENO, log, O_WRONLY | O_CREAT | O_APPEND);
	free(log);
	struct rs_buf blob = { 0 };
	rs_read_fd(STDIN_FILENO, &blob);
	char **env = rs_env_from_records(blob.p ? blob.p : "", blob.len);
	free(blob.p);
	reopen(STDIN_FILENO, "/dev/null", O_RDONLY);
	int in = stdin_fd(a->dir);
	int out = open_output(a->dir, "stdout");
	int err = open_output(a->dir, "stderr");
	int report[2];
	if (pipe2(report, O_CLOEXEC) != 0) {
		char message[256];
		snprintf(message, sizeof message, "pipe: %s", strerror(errno));
		answer_failed(a->dir, "RANKD_RANK_SPAWN_FAILED", message, 0);
	}
	/* orphans of the rank become our children, not init's: reaped at once, and ended even
	 * when they left the rank's process group */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	/* held until the handlers are in place, so that a signal meant for the rank never
	 * ends the supervisor between the fork and the handlers */
	sigset_t forwarded, before;
	sigemptyset(&forwarded);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaddset(&forwarded, FORWARDED[i]);
	sigprocmask(SIG_BLOCK, &forwarded, &before);

	pid_t pid = fork();
	if (pid < 0) {
		char message[256];
		snprintf(message, sizeof message, "fork: %s", strerror(errno));
		answer_failed(a->dir, "RANKD_RANK_SPAWN_FAILED", message, 0);
	}
	if (pid == 0) {
		close(report[0]);
		child(a, env, in, out, err, report[1], &before);
	}
	close(report[1]);
	if (in >= 0)
		close(in);
	close(out);
	close(err);
	close_passed_fd();
	struct rs_buf failure = { 0 };
	rs_read_fd(report[0], &failure);
	close(report[0]);
	if (failure.len > 0) {
		int ignored;
		while (waitpid(pid, &ignored, 0) < 0 && errno == EINTR)
			;
		char *space = strchr(failure.p, ' ');
		const char *message = space ? space + 1 : "";
		if (space)
			*space = '\0';
		write_failed(a->dir, failure.p, message);
		answer_failed(a->dir, failure.p, message, 1);
	}

	/* the rank exists: make it findable before anyone is told it started */
	write_rank_record(a, pid);
	char line[64];
	snprintf(line, sizeof line, "started %d\n", (int)pid);
	answer(line);
	reopen(STDOUT_FILENO, "/dev/null", O_WRONLY);

	rank_pgid = pid;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = forward;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaction(FORWARDED[i], &sa, NULL);
	sigprocmask(SIG_SETMASK, &before, NULL);

	/* wait for the leader; as the subreaper, also reap the rank's orphans as they die, so
	 * that no zombie of the rank waits on init */
	int status = 0, have = 0;
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, 0);
		if (p == pid) {
			status = st;
			have = 1;
			break;
		}
		if (p < 0 && errno != EINTR)
			break;
	}

	/* the leader is gone; whatever it left in its group, its cgroup or (as orphans now
	 * ours) anywhere else goes too, so that the output files are complete and nothing of
	 * the rank outlives it */
	int clean = rs_reap_rest(pid, a->cgroup);
	if (!have) {
		/* cannot happen while we are the leader's parent; never let it pass for a status */
		char *file = rs_path(a->dir, "exit.json");
		rs_write_record(file, "{\"code\":null,\"signal\":null,\"unknown\":\"the supervisor could not wait for the rank\"}");
		free(file);
		return 0;
	}
	write_exit_record(a->dir, status, clean);
	return 0;
}
