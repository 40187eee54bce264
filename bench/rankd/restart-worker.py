"""The worker of the `restart` figure: it says it started, then waits to be killed.

Both launchers run it unchanged (rankd run, torchrun). Its first line goes to stdout, as a
user would see it, and the same line to the bench's unix socket (argv[1]): the bench takes
its time from the socket, so that neither launcher's log forwarding (rankd's stream, the
files torchrun tails) is part of the figure. It lives at most argv[2] seconds, so that a
bench that died cannot leave it behind for long.

    first rank=<RANK> attempt=<RANKD_ATTEMPT or TORCHELASTIC_RESTART_COUNT> pid=<pid>
"""
import os
import socket
import sys
import time

attempt = os.environ.get("RANKD_ATTEMPT") or os.environ.get("TORCHELASTIC_RESTART_COUNT") or "?"
line = "first rank=%s attempt=%s pid=%d\n" % (os.environ.get("RANK", "?"), attempt, os.getpid())
sys.stdout.write(line)
sys.stdout.flush()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(line.encode())
s.close()
time.sleep(float(sys.argv[2]))
