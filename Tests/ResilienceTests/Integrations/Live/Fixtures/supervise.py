#!/usr/bin/env python3
"""Runs a command until this process's standard input closes, then kills it.

The integration tests start nginx through it, so that a server never outlives
the test process that started it, even one that crashes or is killed: the
test holds the write end of our standard input, and the kernel closes it when
the test process ends.

It also clears the signal mask. A Swift test process blocks most signals on its
threads and Foundation's Process passes that mask on, so a server started
directly would never see SIGTERM.

Usage: supervise.py [--ready-port PORT [--ready-file PATH]] COMMAND [ARGUMENT ...]
With --ready-port it prints one line on standard output once something accepts
connections on 127.0.0.1:PORT ("ready"), or once the command has exited or
twenty seconds have passed without ("not listening"), so the test can wait on
that line instead of polling. With --ready-file it first waits for PATH to
exist: nginx writes its pid file only after it has bound its port, so a
connection accepted after that is nginx's, never another server's that took
the port first (nginx then fails to bind, exits, and the test sees
"not listening" and tries another port).
It exits with the command's status if the command ends first.
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time


def report_readiness(port, ready_file, child):
    # Generous: it only matters when the server does not come up, and a loaded CI
    # machine can take seconds to start one.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and child.poll() is None:
        if ready_file is not None and not os.path.exists(ready_file):
            time.sleep(0.01)
            continue
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                print("ready", flush=True)
                return
        except OSError:
            time.sleep(0.01)
    print("not listening", flush=True)


def main():
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    arguments = sys.argv[1:]
    ready_port = None
    ready_file = None
    if arguments[:1] == ["--ready-port"]:
        ready_port = int(arguments[1])
        arguments = arguments[2:]
    if arguments[:1] == ["--ready-file"]:
        ready_file = arguments[1]
        arguments = arguments[2:]
    child = subprocess.Popen(arguments, stdin=subprocess.DEVNULL)
    if ready_port is not None:
        threading.Thread(target=report_readiness, args=(ready_port, ready_file, child), daemon=True).start()

    def exit_with_child():
        os._exit(child.wait())

    threading.Thread(target=exit_with_child, daemon=True).start()
    sys.stdin.buffer.read()
    child.kill()
    child.wait()


if __name__ == "__main__":
    main()
