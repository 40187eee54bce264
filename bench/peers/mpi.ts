// The MPI launchers as peers, named in full: installing mpich takes over the plain
// `mpirun`, so `mpirun` alone may be hydra, which takes none of Open MPI's flags.
//
// Open MPI: root needs --allow-run-as-root; a 2-core box needs --oversubscribe for
// anything past 2 ranks. Its out-of-band and TCP transports are held to loopback so that
// no figure sends a packet off the machine.
//
// odls_base_cutoff: above 32 local ranks, Open MPI 4.1.4 spawns through a thread pool,
// and on this machine a job of more than 32 fast-exiting ranks (`-np 33 true`) then
// hangs after every rank has exited. Raising the cutoff keeps the serial spawn path,
// which completes; without it the fan-out figure would time out instead of measuring mpirun.
export const OPEN_MPI_LAUNCHER = 'mpirun.openmpi';
/** MPICH's process manager; its proxy forks local ranks and connects back over 127.0.0.1. */
export const HYDRA_LAUNCHER = 'mpiexec.hydra';

export function mpirunArgv(np: number, command: readonly string[]): string[] {
  return [
    OPEN_MPI_LAUNCHER,
    '--allow-run-as-root',
    '--oversubscribe',
    '--mca',
    'oob_tcp_if_include',
    'lo',
    '--mca',
    'btl_tcp_if_include',
    'lo',
    '--mca',
    'odls_base_cutoff',
    '100000',
    '-np',
    String(np),
    ...command,
  ];
}

/** `mpiexec.hydra -n N command…`: as a user types it, on this host only (hydra's default). */
export function hydraArgv(np: number, command: readonly string[]): string[] {
  return [HYDRA_LAUNCHER, '-n', String(np), ...command];
}
