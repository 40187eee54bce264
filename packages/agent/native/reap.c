/*
 * After the rank's leader has exited: SIGKILL to what is left of its process group, its
 * cgroup and our own children (orphans of the rank, even those that left its group with
 * setsid), until all are gone, for at most ~10 s. exit.json is written only after this,
 * so that it means "the output files are complete and nothing of the rank runs".
 */
#include "rank-supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GIVE_UP_AFTER_S 10.0

/* True while any process, zombies included, is in the group; EPERM means someone is there. */
static int group_exists(pid_t pgid)
{
	return pgid > 1 && (kill(-pgid, 0) == 0 || errno == EPERM);
}

static int cgroup_populated(const char *cg)
{
	struct rs_buf events = { 0 };
	char *file = rs_path(cg, "cgroup.events");
	int populated = 0;
	if (rs_read_file(file, &events) == 0 && events.p) {
		for (const char *line = events.p; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
			if (strncmp(line, "populated 1", 11) == 0 && (line[11] == '\n' || line[11] == '\0'))
				populated = 1;
	}
	free(file);
	free(events.p);
	return populated;
}

/* Our children cannot be reused pids: they are not reaped yet. */
static void kill_children(void)
{
	struct rs_buf list = { 0 };
	char file[64];
	snprintf(file, sizeof file, "/proc/self/task/%d/children", (int)getpid());
	if (rs_read_file(file, &list) == 0 && list.p) {
		for (char *p = list.p; *p;) {
			char *end;
			long pid = strtol(p, &end, 10);
			if (end == p)
				break;
			if (pid > 1)
				kill((pid_t)pid, SIGKILL);
			p = end + strspn(end, " \n");
		}
	}
	free(list.p);
}

static void kill_cgroup(const char *cg)
{
	char *file = rs_path(cg, "cgroup.kill");
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t ignored = write(fd, "1", 1);
		(void)ignored;
		close(fd);
	}
	free(file);
}

int rs_reap_rest(pid_t pgid, const char *cg)
{
	double delay = 0.0005, waited = 0;
	for (;;) {
		pid_t r;
		int st;
		do
			r = waitpid(-1, &st, WNOHANG);
		while (r > 0 || (r < 0 && errno == EINTR));
		int children = r == 0; /* -1 (ECHILD): no child at all */
		int group = group_exists(pgid);
		int populated = cg && cgroup_populated(cg);
		if (!group && !populated && !children) {
			if (cg)
				rmdir(cg);
			return 1;
		}
		if (waited > GIVE_UP_AFTER_S)
			return 0;
		if (group)
			kill(-pgid, SIGKILL);
		kill_children();
		if (populated)
			kill_cgroup(cg);
		struct timespec ts = { 0, (long)(delay * 1e9) };
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		waited += delay;
		if (delay < 0.05)
			delay *= 2;
	}
}
