/* Rank 1 calls MPI_Abort(…, 42) after wire-up; the others wait in a barrier that never
 * completes. The launcher must end every rank and exit 42. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank=%d size=%d up\n", rank, size);
    fflush(stdout);
    if (rank == 1) MPI_Abort(MPI_COMM_WORLD, 42);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
