#!/usr/bin/env python3
"""get_lease.py: the quota manager's own example, "guest may insert at
most 5 times a second into space X", with the Python client's get_lease.
It makes CALLS inserts as fast as it can and prints, for each, whether
the quota let it happen; the same output as examples/get_lease.c.

    python3 examples/get_lease.py [-s 127.0.0.1:11215] [-b MAX_LEASE] \\
        [SPACE [CALLS]]

Exit status: 0, 1 when the servers could not answer, 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "clients", "python", "src"))

import mccounter  # noqa: E402

#: The quota of the example: inserts per second.
QUOTA = 5


def positive(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("%r is not >= 1" % text)
    return value


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-s", "--servers", default="127.0.0.1:11215")
    ap.add_argument("-b", "--max-lease", type=positive, default=1)
    ap.add_argument("space", nargs="?", default="X")
    ap.add_argument("calls", nargs="?", type=positive, default=7)
    args = ap.parse_args(argv)
    allowed = 0
    with mccounter.quota.init(args.servers, args.max_lease) as client:
        for n in range(1, args.calls + 1):
            try:
                ok = client.get_lease("guest", args.space, "insert", QUOTA)
            except (mccounter.CounterError, OSError) as e:
                print("get_lease: insert %d into %s: %s" % (n, args.space, e),
                      file=sys.stderr)
                return 1
            allowed += ok
            print("insert %d: %s" % (n, "allowed" if ok else "refused"))
    print("allowed %d of %d (quota %d a second)" % (allowed, args.calls,
                                                      QUOTA))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
