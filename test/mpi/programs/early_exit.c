/* Rank 1 leaves with exit code 0 after MPI_Init and before MPI_Finalize; the others
 * wait in a barrier that never completes. The job must fail, not hang, not succeed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank=%d size=%d up\n", rank, size);
    fflush(stdout);
    if (rank == 1) _exit(0);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
