/*
 * rankd's per-rank supervisor: what its files share.
 *
 * The one program between the agent and every process it starts for a job (docs/ranks.md):
 * ranks, PTY ranks, fleet commands and shells, and under --mpi openmpi mpirun's remote
 * shell and the program orted starts for each rank. It pins a rank with
 * sched_setaffinity(2) and set_mempolicy(2) in the rank's own process before the exec.
 * Kept deliberately small: argument parsing, syscalls, fork/exec/wait, status files.
 */
#ifndef RANK_SUPERVISOR_H
#define RANK_SUPERVISOR_H

#define _GNU_SOURCE
#include <sched.h>
#include <stddef.h>
#include <sys/types.h>

#include "version.h"

/* The same bound the agent's validateLaunch puts on a CPU id. */
#define RS_MAX_CPU (1u << 20)
/* MAX_NUMNODES is at most 1 << 10 (CONFIG_NODES_SHIFT); set_mempolicy refuses more. */
#define RS_MAX_NODE 1023u

enum rs_mode { RS_RUN, RS_EXEC, RS_OMPI_RANK, RS_RSH };

struct rs_args {
	enum rs_mode mode;
	/* --cpus: the affinity mask, or NULL when not asked; text as given, for messages */
	cpu_set_t *cpus;
	size_t cpus_size;
	const char *cpus_text;
	/* --mems: the MPOL_BIND nodemask, or NULL when not asked */
	unsigned long *mems;
	unsigned long mems_maxnode;
	const char *mems_text;
	const char *dir;
	/* NULL for "-" */
	const char *cgroup;
	/* 0 for "-": the rank runs as the supervisor's own user */
	int switch_user;
	uid_t uid;
	gid_t gid;
	size_t ngroups;
	gid_t *groups;
	const char *cwd;
	/* the program's argv, NULL-terminated (rsh: HOST then the remote command's words) */
	char **argv;
};

/* A growable byte buffer for records and messages. */
struct rs_buf {
	char *p;
	size_t len, cap;
};

/* args.c */
int rs_parse_args(int argc, char **argv, struct rs_args *a);

/* env.c: the rank's environment as a NULL-terminated NAME=VALUE array */
char **rs_env_from_records(const char *blob, size_t len);
char **rs_env_from_file(const char *dir);
void rs_env_set(char ***env, const char *name, const char *value);

/* prepare.c */
void rs_fail_to(int fd);
__attribute__((noreturn, format(printf, 2, 3))) void rs_fail(const char *code, const char *fmt, ...);
void rs_prepare(const struct rs_args *a, char ***env);
int rs_exec(const struct rs_args *a, char **env);
const char *rs_exec_failure(int e);
void rs_exec_words(const char *file, int e, char *out, size_t size);

/* supervise.c */
int rs_run(const struct rs_args *a);

/* ompi-rank.c: the program orted starts for a rank of an --mpi openmpi job */
__attribute__((noreturn)) void rs_ompi_rank(void);

/* rsh.c: mpirun's remote shell under --mpi openmpi */
__attribute__((noreturn)) void rs_rsh(char **argv);

/* reap.c */
int rs_reap_rest(pid_t pgid, const char *cgroup);

/* files.c */
void rs_buf_add(struct rs_buf *b, const char *s, size_t n);
/* a string literal, its length counted by the compiler */
#define rs_buf_lit(b, lit) rs_buf_add((b), "" lit, sizeof(lit) - 1)
__attribute__((format(printf, 2, 3))) void rs_buf_printf(struct rs_buf *b, const char *fmt, ...);
void rs_buf_json_str(struct rs_buf *b, const char *s);
int rs_read_fd(int fd, struct rs_buf *b);
int rs_read_file(const char *file, struct rs_buf *b);
int rs_write_record(const char *file, const char *json);
char *rs_path(const char *dir, const char *name);
void rs_start_ticks(struct rs_buf *b);
void *rs_alloc(size_t n);

#endif
