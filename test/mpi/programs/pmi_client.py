"""Speaks raw PMI-1 lines to the rank's PMI server, as an MPI library would, and prints
every answer: the tests script good, bad and hostile conversations with it.

    pmi_client.py LINE…   each LINE is sent as is (with "\\n"), then one answer line is
                          read; a LINE of "@RAW:<n>" sends n bytes of "x" without a newline
                          first, "@LONG:<n>" a cmd line padded to n bytes, "@NOREPLY:" + a
                          line sends it without waiting for an answer.

It finds the server the way MPICH does: PMI_FD, else PMI_PORT (+ "cmd=initack pmiid=").
Prints "answer: <line>" per answer, "closed" when the server hangs up, and exits 0.
"""
import os
import socket
import sys
import time


def connect():
    if "PMI_FD" in os.environ:
        return socket.socket(fileno=int(os.environ["PMI_FD"]))
    host, port = os.environ["PMI_PORT"].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(b"cmd=initack pmiid=%s\n" % os.environ["PMI_ID"].encode())
    try:
        for _ in range(4):  # initack, size, rank, debug
            print("answer: " + readline(s), flush=True)
    except EOFError:
        print("closed", flush=True)
        sys.exit(0)
    return s


buffered = b""


def readline(s):
    global buffered
    while b"\n" not in buffered:
        data = s.recv(4096)
        if not data:
            raise EOFError
        buffered += data
    line, buffered = buffered.split(b"\n", 1)
    return line.decode("latin1")


def main():
    s = connect()
    s.settimeout(10)
    kvs = "%KVS%"
    try:
        for arg in sys.argv[1:]:
            arg = arg.replace("%KVS%", kvs).replace("%RANK%", os.environ.get("PMI_RANK", "?"))
            if arg.startswith("@SLEEP:"):
                who, seconds = arg[7:].split(":")
                if who == os.environ.get("PMI_RANK"):
                    time.sleep(float(seconds))
                continue
            if arg.startswith("@RAW:"):
                s.sendall(b"x" * int(arg[5:]))
            elif arg.startswith("@LONG:"):
                line = b"cmd=put kvsname=x key=k value="
                s.sendall(line + b"v" * (int(arg[6:]) - len(line)) + b"\n")
            elif arg == "@EOF":
                readline(s)
                print("still open", flush=True)
                continue
            elif arg.startswith("@NOREPLY:"):
                s.sendall(arg[9:].encode() + b"\n")
                continue
            else:
                s.sendall(arg.encode() + b"\n")
            answer = readline(s)
            for field in answer.split(" "):
                if field.startswith("kvsname="):
                    kvs = field[len("kvsname="):]
            print("answer: " + answer, flush=True)
    except (EOFError, ConnectionResetError, BrokenPipeError):
        print("closed", flush=True)


main()
