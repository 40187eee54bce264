/* rankd check allreduce's own benchmark, for nodes without nccl-tests: MPI_Allreduce of
 * floats (sum) over doubling sizes, printed in nccl-tests' columns so that one parser
 * reads both (size, count, type, redop, root, then time, algbw, busbw and #wrong,
 * out-of-place and in-place). As nccl-tests defines them: algbw = bytes / time and
 * busbw = algbw * 2(n-1)/n, time being the slowest rank's mean per iteration.
 *
 * Every rank's data are small integers, so every sum is exact in a float whatever order
 * the library adds in: after the timed iterations of each size, a fresh reduction of each
 * kind is checked element by element, and #wrong counts the elements that differ, over
 * every rank. The exit status is 1 when any element was wrong.
 *
 * It is built on the node, at run time, with the node's MPICH mpicc (allreduce-check.sh),
 * and started by rankd's PMI-1 server like any MPICH program.
 *
 *   rankd-allreduce -b MIN_BYTES -e MAX_BYTES -f 2 -n ITERS -w WARMUP      (nccl-tests' flags) */
#include <mpi.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BENCH_VERSION 1
/* Sizes up to this run every iteration asked for; larger ones run fewer (see iterations_for). */
#define FULL_ITERATIONS_BYTES ((size_t)8 << 20)
#define MIN_LARGE_ITERATIONS 5
#define HOST_CHARS 64

struct options {
    size_t min_bytes, max_bytes, factor;
    long iterations, warmup;
};

static int rank, nranks;

static void usage_exit(const char *why) {
    if (rank == 0)
        fprintf(stderr,
                "rankd-allreduce: %s\nusage: rankd-allreduce -b MIN_BYTES -e MAX_BYTES -f 2 -n ITERS -w WARMUP\n",
                why);
    MPI_Finalize();
    exit(64);
}

static unsigned long long number(const char *flag, const char *text) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-') {
        char why[128];
        snprintf(why, sizeof why, "%s takes a whole number, not \"%s\"", flag, text);
        usage_exit(why);
    }
    return v;
}

static struct options parse(int argc, char **argv) {
    struct options o = {8, (size_t)256 << 20, 2, 20, 5};
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) usage_exit("every flag takes a value");
        const char *f = argv[i], *v = argv[i + 1];
        if (strcmp(f, "-b") == 0) o.min_bytes = number(f, v);
        else if (strcmp(f, "-e") == 0) o.max_bytes = number(f, v);
        else if (strcmp(f, "-f") == 0) o.factor = number(f, v);
        else if (strcmp(f, "-n") == 0) o.iterations = (long)number(f, v);
        else if (strcmp(f, "-w") == 0) o.warmup = (long)number(f, v);
        else usage_exit("unknown flag");
    }
    if (o.min_bytes < sizeof(float) || o.max_bytes < o.min_bytes) usage_exit("need 4 <= MIN_BYTES <= MAX_BYTES");
    if (o.factor < 2) usage_exit("-f must be 2 or more");
    if (o.iterations < 1) usage_exit("-n must be 1 or more");
    return o;
}

/* Timed iterations for a size: all of them up to 8 MiB, then about as many bytes as 8 MiB
 * moves (iterations * 8 MiB / size), at least 5, so that 256 MiB takes seconds, not minutes. */
static long iterations_for(const struct options *o, size_t bytes) {
    if (bytes <= FULL_ITERATIONS_BYTES) return o->iterations;
    long scaled = (long)((double)o->iterations * (double)FULL_ITERATIONS_BYTES / (double)bytes);
    long floor = o->iterations < MIN_LARGE_ITERATIONS ? o->iterations : MIN_LARGE_ITERATIONS;
    return scaled > floor ? scaled : floor;
}

/* A rank's element i: small integers, so that sums are exact in any order. */
static float value(int r, size_t i) { return (float)((r & 7) + 1 + (int)(i % 7)); }

static void fill(float *buf, size_t count) {
    for (size_t i = 0; i < count; i++) buf[i] = value(rank, i);
}

/* Elements of buf that are not the sum over every rank. */
static long long wrong_elements(const float *buf, size_t count) {
    long long base = 0, wrong = 0;
    for (int r = 0; r < nranks; r++) base += (r & 7) + 1;
    for (size_t i = 0; i < count; i++)
        if (buf[i] != (float)(base + (long long)nranks * (long long)(i % 7))) wrong++;
    return wrong;
}

/* As nccl-tests: warm-up iterations at the largest size and at the smallest, once, before the sweep. */
static void warm_up(float *send, float *recv, const struct options *o) {
    size_t sizes[2] = {o->max_bytes / sizeof(float), o->min_bytes / sizeof(float)};
    for (int s = 0; s < 2; s++)
        for (long i = 0; i < o->warmup; i++)
            MPI_Allreduce(send, recv, (int)sizes[s], MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

/* Mean seconds per iteration of the slowest rank. */
static double timed(const float *send, float *recv, size_t count, long iterations) {
    const void *src = send ? (const void *)send : MPI_IN_PLACE;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (long i = 0; i < iterations; i++) MPI_Allreduce(src, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double mine = (MPI_Wtime() - start) / (double)iterations, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

/* One reduction of fresh data, checked; the count is over every rank. */
static long long checked(float *send, float *recv, size_t count) {
    if (send) fill(send, count);
    else fill(recv, count);
    MPI_Allreduce(send ? (const void *)send : MPI_IN_PLACE, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    long long mine = wrong_elements(recv, count), all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

/* nccl-tests' time column: fewer decimals as it grows. */
static void time_text(char *out, size_t n, double us) {
    snprintf(out, n, us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f", us);
}

struct run {
    double us, algbw, busbw;
    long long wrong;
};

static void print_run(const struct run *r) {
    char t[32];
    time_text(t, sizeof t, r->us);
    printf("  %7s  %6.2f  %6.2f  %5lld", t, r->algbw, r->busbw, r->wrong);
}

static struct run measure(float *send, float *recv, size_t count, long iterations) {
    struct run r;
    double seconds = timed(send, recv, count, iterations);
    double bytes = (double)count * sizeof(float);
    r.us = seconds * 1e6;
    r.algbw = seconds > 0 ? bytes / seconds / 1e9 : 0;
    r.busbw = r.algbw * 2.0 * (nranks - 1) / nranks;
    r.wrong = checked(send, recv, count);
    return r;
}

static void print_header(const struct options *o) {
    char host[HOST_CHARS] = {0}, *hosts = NULL, library[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int pid = (int)getpid(), *pids = NULL, len = 0;
    gethostname(host, sizeof host - 1);
    if (rank == 0) {
        hosts = calloc((size_t)nranks, HOST_CHARS);
        pids = calloc((size_t)nranks, sizeof *pids);
        if (!hosts || !pids) MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Gather(host, HOST_CHARS, MPI_CHAR, hosts, HOST_CHARS, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Gather(&pid, 1, MPI_INT, pids, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Get_library_version(library, &len);
    if (rank != 0) return;
    library[strcspn(library, "\n")] = '\0';
    printf("# rankd-allreduce %d: MPI_Allreduce, float sum, in nccl-tests' columns; %s\n", BENCH_VERSION, library);
    printf("# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %zu(factor) warmup iters: %ld iters: %ld "
           "agg iters: 1 validation: 1 graph: 0\n",
           o->min_bytes, o->max_bytes, o->factor, o->warmup, o->iterations);
    printf("# iterations: %ld per size up to %zu bytes, then iters x %zu / size (at least %d)\n", o->iterations,
           FULL_ITERATIONS_BYTES, FULL_ITERATIONS_BYTES, MIN_LARGE_ITERATIONS);
    printf("#\n# Using devices\n");
    for (int r = 0; r < nranks; r++)
        printf("#  Rank %2d Group  0 Pid %6d on %10s device -1 [cpu] MPI\n", r, pids[r],
               hosts + (size_t)r * HOST_CHARS);
    printf("#\n");
    printf("#                                                              out-of-place"
           "                       in-place\n");
    printf("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
           "busbw #wrong\n");
    printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
           "(GB/s)\n");
    fflush(stdout);
    free(hosts);
    free(pids);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    struct options o = parse(argc, argv);
    if (o.max_bytes / sizeof(float) > (size_t)INT32_MAX) usage_exit("MAX_BYTES is above what one MPI call takes");
    size_t max_count = o.max_bytes / sizeof(float);
    float *send = malloc(max_count * sizeof(float)), *recv = malloc(max_count * sizeof(float));
    if (!send || !recv) {
        fprintf(stderr, "rankd-allreduce: rank %d: cannot allocate 2 x %zu bytes\n", rank, o.max_bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    print_header(&o);
    fill(send, max_count);
    warm_up(send, recv, &o);
    long long wrong = 0;
    double busbw_sum = 0;
    int runs = 0;
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
        size_t count = bytes / sizeof(float);
        long iterations = iterations_for(&o, count * sizeof(float));
        struct run out = measure(send, recv, count, iterations);
        struct run in = measure(NULL, recv, count, iterations);
        wrong += out.wrong + in.wrong;
        busbw_sum += out.busbw + in.busbw;
        runs += 2;
        if (rank == 0) {
            printf("%12zu  %12zu  %8s  %6s  %6i", count * sizeof(float), count, "float", "sum", -1);
            print_run(&out);
            print_run(&in);
            printf("\n");
            fflush(stdout);
        }
        if (bytes > SIZE_MAX / o.factor) break;
    }
    if (rank == 0) {
        printf("# Out of bounds values : %lld %s\n", wrong, wrong == 0 ? "OK" : "FAILED");
        printf("# Avg bus bandwidth    : %g \n#\n", runs ? busbw_sum / runs : 0.0);
        fflush(stdout);
    }
    free(send);
    free(recv);
    /* every rank enters MPI_Finalize together: one that arrives late (rank 0, after printing)
     * can hang MPICH 4.0's UCX endpoint flush against peers already blocked in PMI's barrier */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return wrong == 0 ? 0 : 1;
}
