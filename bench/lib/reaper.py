#!/usr/bin/env python3
"""Run a command as a child subreaper, so that everything it starts stays in its process tree.

OpenSSH ControlPersist masters (Ansible's) fork into the background and would be re-parented to
the machine's init, out of reach of /usr/bin/time and of the tree the benchmark polls for memory.
With this wrapper they are re-parented here instead: their memory is seen while the run lasts,
and once the command exits they are ended (SIGTERM, as `ssh -O exit` would) and reaped, so their
CPU time counts for the tool that started them.

usage: reaper.py COMMAND [ARG...]      exit status: the command's
"""
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("reaper: prctl(PR_SET_CHILD_SUBREAPER) failed", file=sys.stderr)
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(sys.argv[1], sys.argv[1:])
        except OSError as e:
            print(f"reaper: {sys.argv[1]}: {e}", file=sys.stderr)
            os._exit(127)
    signal.signal(signal.SIGINT, lambda *_: os.kill(pid, signal.SIGINT))
    signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGTERM))
    status = None
    while status is None:
        try:
            p, st = os.wait()
        except ChildProcessError:
            break
        if p == pid:
            status = st
    # leftovers (ControlPersist masters): end them, reap them
    deadline = time.time() + 5
    while True:
        left = children(os.getpid())
        if not left:
            break
        for c in left:
            try:
                os.kill(c, signal.SIGTERM if time.time() < deadline else signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            break
        time.sleep(0.02)
    if status is None:
        return 1
    return os.waitstatus_to_exitcode(status) if os.waitstatus_to_exitcode(status) >= 0 else 128 - os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
