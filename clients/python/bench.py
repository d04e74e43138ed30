#!/usr/bin/env python3
"""bench.py: requests per second of the blocking client against one server,
at depth 1 (one Get per round trip) and pipelined at depth 32 (32 Gets per
round trip). Prints the two numbers, depth 1 first.

    python3 bench.py HOST:PORT [SECONDS]     (default 5 seconds per row)
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "src"))

from mccounter import Client  # noqa: E402

NAME = "bench-py"


def depth1(c: Client, seconds: float) -> float:
    """Gets, one per round trip: requests per second."""
    n, end = 0, time.monotonic() + seconds
    start = time.monotonic()
    while time.monotonic() < end:
        for _ in range(100):
            c.get(NAME)
        n += 100
    return n / (time.monotonic() - start)


def pipelined(c: Client, seconds: float, depth: int = 32) -> float:
    """Gets, depth per round trip: requests per second."""
    n, end = 0, time.monotonic() + seconds
    start = time.monotonic()
    while time.monotonic() < end:
        for _ in range(10):
            pl = c.pipeline()
            for _ in range(depth):
                pl.get(NAME)
            pl.execute()
            n += depth
    return n / (time.monotonic() - start)


def main(argv: list[str]) -> int:
    """Runs both rows and prints their rates."""
    if len(argv) not in (2, 3):
        print("usage: bench.py HOST:PORT [SECONDS]", file=sys.stderr)
        return 2
    seconds = float(argv[2]) if len(argv) == 3 else 5.0
    with Client(argv[1], timeout=10) as c:
        c.acquire(NAME, 1, 1 << 31)   # the counter must exist for Get
        print("%.0f" % depth1(c, seconds))
        print("%.0f" % pipelined(c, seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
