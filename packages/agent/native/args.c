/*
 * The command line, parsed strictly: anything the agent would never write is refused with
 * a message and exit 2 before any file or process is touched, so a mistake in the agent
 * shows as a clear usage error instead of a rank pinned to the wrong CPUs. Numbers are
 * plain decimal without sign or leading zeros; lists ascend without overlap, as the
 * agent's formatCpuList writes them.
 *
 *   rank-supervisor run|exec [--cpus LIST] [--mems LIST] RANKDIR CGROUP|- UID:GID:G1,G2|- CWD -- ARGV...
 *   rank-supervisor ompi-rank
 *   rank-supervisor rsh HOST ARG...
 *
 * ompi-rank and rsh are run by Open MPI (orted, mpirun), whose command lines they take as
 * Open MPI gives them: they check their own arguments (ompi-rank.c, rsh.c).
 */
#include "rank-supervisor.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USAGE                                                                                                  \
	"usage: rank-supervisor run|exec [--cpus LIST] [--mems LIST] RANKDIR CGROUP|- UID:GID:G1,G2|- CWD -- ARGV...\n" \
	"       rank-supervisor ompi-rank\n"                                                                      \
	"       rank-supervisor rsh HOST ARG...\n"                                                                \
	"       rank-supervisor --version"

__attribute__((noreturn, format(printf, 1, 2))) static void usage(const char *fmt, ...)
{
	va_list ap;
	fputs("rank-supervisor: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s\n", USAGE);
	exit(2);
}

/* A decimal number in [0, max] spanning exactly [s, end); -1 when it is not one. */
static long long number(const char *s, const char *end, unsigned long long max)
{
	unsigned long long v = 0;
	if (s == end || (*s == '0' && end - s > 1))
		return -1;
	for (const char *p = s; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (unsigned)(*p - '0');
		if (v > max)
			return -1;
	}
	return (long long)v;
}

/*
 * "0-3,8" → calls set(id) for each id. what names the list in messages ("--cpus"),
 * unit names one element ("CPU").
 */
static void parse_list(const char *what, const char *unit, const char *text, unsigned max, void (*set)(void *, unsigned), void *ctx)
{
	long long prev = -1;
	if (*text == '\0')
		usage("%s: empty list", what);
	for (const char *s = text;;) {
		const char *comma = strchr(s, ',');
		const char *end = comma ? comma : s + strlen(s);
		const char *dash = memchr(s, '-', (size_t)(end - s));
		if (s == end)
			usage("%s \"%s\": empty element", what, text);
		long long lo = number(s, dash ? dash : end, 1ull << 40);
		long long hi = dash ? number(dash + 1, end, 1ull << 40) : lo;
		if (lo < 0 || hi < 0)
			usage("%s \"%s\": \"%.*s\" is not a number or a range N-M", what, text, (int)(end - s), s);
		if (hi > (long long)max)
			usage("%s \"%s\": %s %lld is above %u", what, text, unit, hi, max);
		if (hi < lo)
			usage("%s \"%s\": range %lld-%lld runs backwards", what, text, lo, hi);
		if (lo <= prev)
			usage("%s \"%s\": elements must ascend without overlap (\"%.*s\" after %lld)", what, text, (int)(end - s), s, prev);
		for (long long id = lo; id <= hi; id++)
			set(ctx, (unsigned)id);
		prev = hi;
		if (!comma)
			return;
		s = comma + 1;
	}
}

static void max_id(void *ctx, unsigned id)
{
	unsigned *m = ctx;
	if (id > *m)
		*m = id;
}

static void set_cpu(void *ctx, unsigned id)
{
	struct rs_args *a = ctx;
	CPU_SET_S(id, a->cpus_size, a->cpus);
}

static void set_node(void *ctx, unsigned id)
{
	struct rs_args *a = ctx;
	a->mems[id / (8 * sizeof(unsigned long))] |= 1ul << (id % (8 * sizeof(unsigned long)));
}

static void parse_cpus(struct rs_args *a, const char *text)
{
	unsigned highest = 0;
	parse_list("--cpus", "CPU", text, RS_MAX_CPU, max_id, &highest);
	/* the kernel refuses a mask shorter than its nr_cpu_ids (EINVAL) and ignores bits
	 * past it, so the mask is never shorter than the largest kernel's 8192 CPUs */
	unsigned bits = highest + 1 > 8192 ? highest + 1 : 8192;
	a->cpus = CPU_ALLOC(bits);
	if (!a->cpus)
		usage("--cpus: out of memory");
	a->cpus_size = CPU_ALLOC_SIZE(bits);
	CPU_ZERO_S(a->cpus_size, a->cpus);
	parse_list("--cpus", "CPU", text, RS_MAX_CPU, set_cpu, a);
	a->cpus_text = text;
}

static void parse_mems(struct rs_args *a, const char *text)
{
	unsigned highest = 0;
	parse_list("--mems", "NUMA node", text, RS_MAX_NODE, max_id, &highest);
	size_t words = highest / (8 * sizeof(unsigned long)) + 1;
	a->mems = rs_alloc(words * sizeof(unsigned long));
	memset(a->mems, 0, words * sizeof(unsigned long));
	/* set_mempolicy reads maxnode - 1 bits (a historical off-by-one numactl also follows) */
	a->mems_maxnode = words * 8 * sizeof(unsigned long) + 1;
	parse_list("--mems", "NUMA node", text, RS_MAX_NODE, set_node, a);
	a->mems_text = text;
}

/* "-", or UID:GID with an optional third field of comma-separated gids (empty ones skipped). */
static void parse_user(struct rs_args *a, const char *text)
{
	if (strcmp(text, "-") == 0)
		return;
	const char *c1 = strchr(text, ':');
	const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	const char *end = text + strlen(text);
	long long uid = c1 ? number(text, c1, 0xfffffffe) : -1;
	long long gid = c1 ? number(c1 + 1, c2 ? c2 : end, 0xfffffffe) : -1;
	if (uid < 0 || gid < 0)
		usage("user \"%s\": expected UID:GID:G1,G2 or -", text);
	a->switch_user = 1;
	a->uid = (uid_t)uid;
	a->gid = (gid_t)gid;
	a->groups = rs_alloc((strlen(text) / 2 + 1) * sizeof(gid_t));
	for (const char *s = c2 ? c2 + 1 : end; s < end;) {
		const char *comma = strchr(s, ',');
		const char *e = comma ? comma : end;
		if (e > s) {
			long long g = number(s, e, 0xfffffffe);
			if (g < 0)
				usage("user \"%s\": group \"%.*s\" is not a number", text, (int)(e - s), s);
			a->groups[a->ngroups++] = (gid_t)g;
		}
		s = e + (comma ? 1 : 0);
	}
	/* no supplementary list means the primary group alone */
	if (a->ngroups == 0)
		a->groups[a->ngroups++] = a->gid;
}

int rs_parse_args(int argc, char **argv, struct rs_args *a)
{
	memset(a, 0, sizeof *a);
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("rank-supervisor %d\n", RS_VERSION);
		exit(0);
	}
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		puts(USAGE);
		exit(0);
	}
	if (argc < 2)
		usage("no mode: expected run, exec, ompi-rank or rsh");
	if (strcmp(argv[1], "ompi-rank") == 0 || strcmp(argv[1], "rsh") == 0) {
		a->mode = argv[1][0] == 'o' ? RS_OMPI_RANK : RS_RSH;
		a->argv = argv + 2;
		return 0;
	}
	if (strcmp(argv[1], "run") == 0)
		a->mode = RS_RUN;
	else if (strcmp(argv[1], "exec") == 0)
		a->mode = RS_EXEC;
	else
		usage("unknown mode \"%s\": expected run, exec, ompi-rank or rsh", argv[1]);
	int i = 2;
	while (i < argc && argv[i][0] == '-' && strcmp(argv[i], "--") != 0) {
		const char *opt = argv[i];
		const char *eq = strchr(opt, '=');
		size_t name_len = eq ? (size_t)(eq - opt) : strlen(opt);
		int cpus = name_len == 6 && strncmp(opt, "--cpus", 6) == 0;
		int mems = name_len == 6 && strncmp(opt, "--mems", 6) == 0;
		if (!cpus && !mems)
			usage("unknown option \"%s\"", opt);
		const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
		if (!value)
			usage("%.6s needs a list", opt);
		if (cpus ? a->cpus != NULL : a->mems != NULL)
			usage("%.6s given twice", opt);
		if (cpus)
			parse_cpus(a, value);
		else
			parse_mems(a, value);
		i += eq ? 1 : 2;
	}
	if (argc - i < 4)
		usage("expected RANKDIR CGROUP|- UID:GID:GROUPS|- CWD after the mode and options");
	a->dir = argv[i];
	a->cgroup = strcmp(argv[i + 1], "-") == 0 ? NULL : argv[i + 1];
	parse_user(a, argv[i + 2]);
	a->cwd = argv[i + 3];
	if (a->dir[0] == '\0' || a->cwd[0] == '\0' || argv[i + 1][0] == '\0')
		usage("RANKDIR, CGROUP and CWD must not be empty");
	i += 4;
	if (i >= argc || strcmp(argv[i], "--") != 0)
		usage("missing \"--\" before the program's argv%s%s%s", i < argc ? " (found \"" : "", i < argc ? argv[i] : "", i < argc ? "\")" : "");
	if (i + 1 >= argc || argv[i + 1][0] == '\0')
		usage("no program after \"--\"");
	a->argv = argv + i + 1;
	return 0;
}
