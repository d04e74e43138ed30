#!/usr/bin/env python3
"""busiest-listing.py: what a Busiest (0x37) listing costs on a server with
many rate-limit records (doc/performance.md). Fills the server on
127.0.0.1:PORT (its counter port) with N window records, distinct names
checked over one pipelined connection, then times Busiest for 16 names
RUNS times, from the send to the end marker: once just after the fill,
once after a second of checks on the first 100000 names. With FLOOD,
then also sends FLOOD Busiest requests pipelined on one connection, RUNS
times, and times each from the first send to the last end marker (what
a client that never waits costs the server). Prints the times; asserts
nothing.

usage: bench/busiest-listing.py PORT N RUNS [FLOOD]
"""
import socket, struct, sys, threading, time

if len(sys.argv) not in (4, 5):
    sys.exit("usage: busiest-listing.py PORT N RUNS [FLOOD]")
port, n, runs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
flood = int(sys.argv[4]) if len(sys.argv) == 5 else 0
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

def req(op, body, opaque):
    return struct.pack(">BBHII", 0x90, op, 0, len(body), opaque) + body

def win(name):
    return req(0x34, struct.pack(">BBHIIQH", 0, 10, 0, 1000, 1,
                                 3600 * 10**9, len(name)) + name, 1)

def read_exact(k):
    buf = bytearray()
    while len(buf) < k:
        chunk = s.recv(k - len(buf))
        if not chunk:
            raise SystemExit("the server closed the connection")
        buf += chunk
    return bytes(buf)

def fill(lo, hi):
    batch = 5000
    for start in range(lo, hi, batch):
        end = min(hi, start + batch)
        s.sendall(b"".join(win(b"w%07d" % i) for i in range(start, end)))
        read_exact((end - start) * (12 + 32))

def busiest():
    t0 = time.perf_counter()
    s.sendall(req(0x37, struct.pack(">I", 16), 7))
    recs = 0
    while True:
        h = read_exact(12)
        blen = struct.unpack(">I", h[4:8])[0]
        if h[2] != 0:
            raise SystemExit("Busiest answered status 0x%02x" % h[2])
        read_exact(blen)
        if blen == 0:
            break
        recs += 1
    return time.perf_counter() - t0, recs

t = time.perf_counter()
fill(0, n)
print("filled %d window records in %.1f s" % (n, time.perf_counter() - t))
hot = min(n, 100000)
for label in ("idle", "after a second of checks on %d names" % hot):
    if label != "idle":
        end = time.monotonic() + 1.2
        while time.monotonic() < end:
            fill(0, hot)
    else:
        time.sleep(1.1)
    ts = []
    for _ in range(runs):
        dt, recs = busiest()
        ts.append(dt)
    ts.sort()
    print("%s: busiest(16) %d records, wall ms min %.3f median %.3f max %.3f (%d runs)"
          % (label, recs, ts[0] * 1e3, ts[len(ts) // 2] * 1e3, ts[-1] * 1e3, runs))

def busiest_flood(k):
    """k pipelined Busiest for 16 names; the wall time to the last end."""
    t0 = time.perf_counter()
    # Sent from a thread: the answers (up to 16 records each) pass the
    # server's watermark long before the requests are all sent.
    sender = threading.Thread(
        target=s.sendall, args=(req(0x37, struct.pack(">I", 16), 7) * k,))
    sender.start()
    ends = 0
    while ends < k:
        h = read_exact(12)
        blen = struct.unpack(">I", h[4:8])[0]
        if h[2] != 0:
            raise SystemExit("Busiest answered status 0x%02x" % h[2])
        read_exact(blen)
        if blen == 0:
            ends += 1
    sender.join()
    return time.perf_counter() - t0

if flood > 0:
    ts = sorted(busiest_flood(flood) for _ in range(runs))
    print("flood: %d pipelined busiest(16), wall ms min %.1f median %.1f max %.1f (%d runs)"
          % (flood, ts[0] * 1e3, ts[len(ts) // 2] * 1e3, ts[-1] * 1e3, runs))
