"""A business-card exchange over PMI-1, as MPI_Init does it: every rank puts COUNT cards
of SIZE bytes, enters the barrier, then reads every card of every rank back and checks
it. Prints "cards ok <read>" or "cards bad <why>" and exits 0 or 1.

    pmi_cards.py COUNT SIZE     (finds its server through PMI_FD, with PMI_RANK, PMI_SIZE)
"""
import os
import socket
import sys

count, size = int(sys.argv[1]), int(sys.argv[2])
rank, world = int(os.environ["PMI_RANK"]), int(os.environ["PMI_SIZE"])
s = socket.socket(fileno=int(os.environ["PMI_FD"]))
f = s.makefile("rwb", buffering=0)


def ask(line):
    f.write(line.encode() + b"\n")
    answer = f.readline().decode().strip()
    fields = dict(x.split("=", 1) for x in answer.split(" ") if "=" in x)
    if fields.get("rc", "0") != "0":
        print("cards bad %r -> %r" % (line[:80], answer), flush=True)
        sys.exit(1)
    return fields


def card(r, i):
    # different on every rank and index, and exactly SIZE bytes
    return ("%d.%d." % (r, i) * size)[:size]


ask("cmd=init pmi_version=1 pmi_subversion=1")
kvs = ask("cmd=get_my_kvsname")["kvsname"]
for i in range(count):
    ask("cmd=put kvsname=%s key=card-%d-%d value=%s" % (kvs, rank, i, card(rank, i)))
ask("cmd=barrier_in")
read = 0
for r in range(world):
    for i in range(count):
        value = ask("cmd=get kvsname=%s key=card-%d-%d" % (kvs, r, i))["value"]
        if value != card(r, i):
            print("cards bad card-%d-%d is %r" % (r, i, value[:40]), flush=True)
            sys.exit(1)
        read += 1
ask("cmd=barrier_in")
ask("cmd=finalize")
print("cards ok %d" % read, flush=True)
