"""`gpushare watch` keeps glibc's malloc to a few arenas (`process.few_arenas`): by default each thread that
allocates gets one of its own, which keeps what that thread freed."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

#: Eight threads each allocating in C (ctypes lets go of the GIL), then glibc's own count of its arenas.
_THREADS = """
import ctypes, sys, threading
from gpushare import process
if sys.argv[1] == "few":
    assert process.few_arenas(1)
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
start = threading.Barrier(8)
def work():
    start.wait()
    for _ in range(2000):
        libc.free(libc.malloc(4096))
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
libc.malloc_stats()
"""


def arenas(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", _THREADS, mode], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return sum(1 for line in done.stderr.splitlines() if line.startswith("Arena "))


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the setting is glibc's malloc's")
def test_threads_share_the_arenas_allowed() -> None:
    assert arenas("default") > 2  # a thread, an arena
    assert arenas("few") == 1
