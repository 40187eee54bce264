/* MPI_Allreduce over every rank; prints what each rank saw, so a test can check the
 * world size (N singletons would each print size=1), the sum, and the CPUs the rank is
 * allowed after MPI_Init (an MPI library that re-pins would show here). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static void cpus_allowed(char *out, size_t n) {
    char line[512];
    FILE *f = fopen("/proc/self/status", "r");
    snprintf(out, n, "?");
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
            char *v = line + 18;
            while (*v == '\t' || *v == ' ') v++;
            v[strcspn(v, "\n")] = 0;
            snprintf(out, n, "%s", v);
        }
    }
    if (f) fclose(f);
}

int main(int argc, char **argv) {
    int rank, size, one = 1, sum = 0, len;
    char host[MPI_MAX_PROCESSOR_NAME], cpus[256];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    cpus_allowed(cpus, sizeof cpus);
    printf("rank=%d size=%d sum=%d cpus=%s host=%s\n", rank, size, sum, cpus, host);
    fflush(stdout);
    MPI_Finalize();
    return sum == size ? 0 : 1;
}
