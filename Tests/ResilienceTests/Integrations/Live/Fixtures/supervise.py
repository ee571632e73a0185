#!/usr/bin/env python3
"""Runs a command until this process's standard input closes, then kills it.

The integration tests start nginx through it, so that a server never outlives
the test process that started it, even one that crashes or is killed: the
test holds the write end of our standard input, and the kernel closes it when
the test process ends.

It also clears the signal mask. A Swift test process blocks most signals on its
threads and Foundation's Process passes that mask on, so a server started
directly would never see SIGTERM.

Usage: supervise.py COMMAND [ARGUMENT ...]
It exits with the command's status if the command ends first.
"""

import os
import signal
import subprocess
import sys
import threading


def main():
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    child = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL)

    def exit_with_child():
        os._exit(child.wait())

    threading.Thread(target=exit_with_child, daemon=True).start()
    sys.stdin.buffer.read()
    child.kill()
    child.wait()


if __name__ == "__main__":
    main()
