// Open MPI's launcher as a peer. Root needs --allow-run-as-root; a 2-core box needs
// --oversubscribe for anything past 2 ranks. The out-of-band and TCP transports are held
// to loopback so that no figure sends a packet off the machine.
//
// odls_base_cutoff: above 32 local ranks, Open MPI 4.1.4 spawns through a thread pool,
// and on this machine a job of more than 32 fast-exiting ranks (`-np 33 true`) then
// hangs after every rank has exited. Raising the cutoff keeps the serial spawn path,
// which completes; without it the fan-out figure would time out instead of measuring mpirun.
export function mpirunArgv(np: number, command: readonly string[]): string[] {
  return [
    'mpirun',
    '--allow-run-as-root',
    '--oversubscribe',
    '--mca', 'oob_tcp_if_include', 'lo',
    '--mca', 'btl_tcp_if_include', 'lo',
    '--mca', 'odls_base_cutoff', '100000',
    '-np', String(np),
    ...command,
  ];
}
