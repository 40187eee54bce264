/* An MPICH hello for the gang-restart test (test/cluster/restart-mpich.test.ts).
 *
 * Before MPI_Init it asks its PMI-1 server on PMI_FD for the KVS name, as MPICH's own PMI
 * client does first thing, and prints it: the test sees which PMI namespace each attempt
 * got. On attempt 0 (RANKD_ATTEMPT) rank 1 then exits 1 without MPI_Init, so the attempt
 * fails with the others waiting in MPI_Init. It waits first (at most 30 s) until rank 0 has
 * printed, which rank 0 marks with a file in RESTART_HELLO_SYNC_DIR: otherwise the restart
 * may end rank 0 before its line, and the test would find no log of it. Otherwise every
 * rank prints the world size MPI got from PMI and the sum of an allreduce over that world. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One PMI line, read a byte at a time: MPICH reads the rest of the conversation on this fd. */
static void pmi_line(int fd, const char *request, char *answer, size_t n) {
    size_t len = 0;
    char c;
    if (write(fd, request, strlen(request)) != (ssize_t)strlen(request)) exit(90);
    while (len + 1 < n && read(fd, &c, 1) == 1 && c != '\n') answer[len++] = c;
    answer[len] = 0;
}

static void kvsname(char *out, size_t n) {
    char answer[256];
    const char *fd = getenv("PMI_FD");
    snprintf(out, n, "?");
    if (!fd) return;
    pmi_line(atoi(fd), "cmd=init pmi_version=1 pmi_subversion=1\n", answer, sizeof answer);
    pmi_line(atoi(fd), "cmd=get_my_kvsname\n", answer, sizeof answer);
    const char *name = strstr(answer, "kvsname=");
    if (name) snprintf(out, n, "%.*s", (int)strcspn(name + 8, " "), name + 8);
}

/* RESTART_HELLO_SYNC_DIR/printed-ATTEMPT-RANK: this rank's first line is out. */
static void sync_path(char *out, size_t n, const char *attempt, const char *rank) {
    const char *dir = getenv("RESTART_HELLO_SYNC_DIR");
    snprintf(out, n, "%s/printed-%s-%s", dir ? dir : "/nonexistent", attempt ? attempt : "?", rank ? rank : "?");
}

int main(int argc, char **argv) {
    int rank, size, one = 1, sum = 0;
    char kvs[128];
    const char *attempt = getenv("RANKD_ATTEMPT");
    const char *env_rank = getenv("PMI_RANK");
    kvsname(kvs, sizeof kvs);
    char mark[512];
    printf("attempt=%s kvsname=%s\n", attempt ? attempt : "?", kvs);
    fflush(stdout);
    sync_path(mark, sizeof mark, attempt, env_rank);
    FILE *printed = fopen(mark, "w");
    if (printed) fclose(printed);
    if (attempt && strcmp(attempt, "0") == 0 && env_rank && strcmp(env_rank, "1") == 0) {
        sync_path(mark, sizeof mark, attempt, "0");
        for (int waited = 0; waited < 300 && access(mark, F_OK) != 0; waited++) usleep(100000);
        fprintf(stderr, "rank 1 fails attempt 0\n");
        return 1;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank=%d size=%d sum=%d\n", rank, size, sum);
    fflush(stdout);
    MPI_Finalize();
    return sum == size ? 0 : 1;
}
