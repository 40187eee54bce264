/*
 * The rank's environment, built from NAME=VALUE\0 records on stdin (run mode) or in the
 * file RANKDIR/env (exec mode, where node-pty offers no other channel). Never from this process's own environment, which is the agent's fixed one:
 * the records are data here, installed only in the program's exec, after the switch to
 * the user, so that no loader variable of a caller ever acts in a process that is root.
 * Values are bytes and pass through untouched: '=', newlines, anything but NUL. A record
 * with an empty name is skipped, one without '=' has an empty value, and a later record
 * of a name replaces an earlier one.
 */
#include "rank-supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t count(char **env)
{
	size_t n = 0;
	while (env && env[n])
		n++;
	return n;
}

/* Sets NAME=VALUE from a name and value that need not be terminated. */
static void set_n(char ***env, const char *name, size_t name_len, const char *value, size_t value_len)
{
	char *entry = rs_alloc(name_len + value_len + 2);
	memcpy(entry, name, name_len);
	entry[name_len] = '=';
	memcpy(entry + name_len + 1, value, value_len);
	entry[name_len + 1 + value_len] = '\0';
	size_t n = count(*env);
	for (size_t i = 0; i < n; i++) {
		if (strncmp((*env)[i], entry, name_len + 1) == 0) {
			free((*env)[i]);
			(*env)[i] = entry;
			return;
		}
	}
	char **grown = realloc(*env, (n + 2) * sizeof(char *));
	if (!grown)
		abort();
	grown[n] = entry;
	grown[n + 1] = NULL;
	*env = grown;
}

void rs_env_set(char ***env, const char *name, const char *value)
{
	set_n(env, name, strlen(name), value, strlen(value));
}

char **rs_env_from_records(const char *blob, size_t len)
{
	char **env = rs_alloc(sizeof(char *));
	env[0] = NULL;
	for (const char *rec = blob, *end = blob + len; rec < end;) {
		const char *nul = memchr(rec, '\0', (size_t)(end - rec));
		const char *stop = nul ? nul : end;
		const char *eq = memchr(rec, '=', (size_t)(stop - rec));
		size_t name_len = (size_t)((eq ? eq : stop) - rec);
		if (name_len > 0)
			set_n(&env, rec, name_len, eq ? eq + 1 : stop, eq ? (size_t)(stop - eq - 1) : 0);
		rec = stop + 1;
	}
	return env;
}

char **rs_env_from_file(const char *dir)
{
	/* the agent wrote it (0600, in a directory only root may enter); a link there is no file of ours */
	char *file = rs_path(dir, "env");
	int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		rs_fail("RANKD_RANK_SPAWN_FAILED", "%s: %s", file, strerror(errno));
	struct rs_buf blob = { 0 };
	int r = rs_read_fd(fd, &blob);
	close(fd);
	/* read once: the values (a job's secrets among them) stay on disk no longer than this */
	if (unlink(file) != 0 || r != 0)
		rs_fail("RANKD_RANK_SPAWN_FAILED", "%s: %s", file, strerror(errno));
	free(file);
	char **env = rs_env_from_records(blob.p ? blob.p : "", blob.len);
	free(blob.p);
	return env;
}
