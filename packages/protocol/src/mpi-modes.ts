// The MPI modes of a job, without the schema library: `rankd run` checks --mpi with this
// list, and loading TypeBox for it would cost the CLI hundreds of milliseconds.

/**
 * How MPI ranks find each other. `pmi1`, the default (as in Flux): every rank gets a PMI-1
 * server from its agent (MPICH, Intel MPI, MVAPICH). `openmpi`: Open MPI's own mpirun
 * starts the ranks through rankd's agents. `none`: no PMI at all.
 */
export const MPI_MODES = ['pmi1', 'openmpi', 'none'] as const;
export type MpiMode = (typeof MPI_MODES)[number];
