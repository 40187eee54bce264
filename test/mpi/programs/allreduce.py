# rankd's Open MPI test program: one MPI_COMM_WORLD, an allreduce over it, and where each
# rank runs. `fail=R:CODE` as argv[1] makes rank R leave with CODE right after the allreduce
# (os._exit: no MPI_Finalize), the others wait in a barrier that never completes.
import os, sys
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
total = comm.allreduce(rank + 1, op=MPI.SUM)
status = open('/proc/self/status').read().splitlines()
cpus = next(l.split(':', 1)[1].strip() for l in status if l.startswith('Cpus_allowed_list'))
print(f"rank={rank} size={size} sum={total} cpus={cpus} rankd_rank={os.environ.get('RANK')} pid={os.getpid()} netns={os.readlink('/proc/self/ns/net')}", flush=True)
print(f"rank {rank} stderr line", file=sys.stderr, flush=True)
if len(sys.argv) > 1 and sys.argv[1].startswith('fail='):
    who, code = map(int, sys.argv[1][5:].split(':'))
    if rank == who:
        os._exit(code)
    comm.Barrier()
