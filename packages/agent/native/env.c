/*
 * The rank's environment, built as supervisor.pl builds it: from NAME=VALUE\0 records on
 * stdin (run mode) or from RANKD_ENV_NAME variables (exec mode, where node-pty offers no
 * other channel). Values are bytes and pass through untouched: '=', newlines, anything
 * but NUL. A record with an empty name is skipped, one without '=' has an empty value,
 * and a later record of a name replaces an earlier one (a perl hash's rules).
 */
#include "rank-supervisor.h"

#include <stdlib.h>
#include <string.h>

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

char **rs_env_from_prefixed(char **own)
{
	static const char prefix[] = "RANKD_ENV_";
	const size_t plen = sizeof prefix - 1;
	char **env = rs_alloc(sizeof(char *));
	env[0] = NULL;
	const char *term = NULL;
	int has_term = 0;
	for (size_t i = 0; own && own[i]; i++) {
		const char *e = own[i];
		const char *eq = strchr(e, '=');
		if (!eq)
			continue;
		if (strncmp(e, "TERM=", 5) == 0)
			term = eq + 1;
		if (strncmp(e, prefix, plen) != 0 || eq - e <= (long)plen)
			continue;
		size_t name_len = (size_t)(eq - e) - plen;
		if (name_len == 4 && strncmp(e + plen, "TERM", 4) == 0)
			has_term = 1;
		set_n(&env, e + plen, name_len, eq + 1, strlen(eq + 1));
	}
	/* node-pty sets TERM for the terminal it made; the rank keeps it unless planned otherwise */
	if (!has_term && term)
		rs_env_set(&env, "TERM", term);
	return env;
}
