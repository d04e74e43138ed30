#!/usr/bin/env python3
"""job_runner.py: runs a tenant's jobs within its share of a throttled
node (doc/throttling.md). Each job costs some units of work; before
running it a worker charges them to the tenant with Throttle. An allowed
charge runs the job at once; a throttled one says why (the reserve is
spent and the node has no pool, the pool is empty, or the hard limit is
reached) and when the next second starts, and the worker sleeps exactly
retry_after before charging again, so the runner keeps to the
tenant's reserve, its share of the free pool and its hard limit without
polling.

Each runner first takes a slot of the tenant's runner semaphore
(Wait_acquire with a lease that renews itself in the background), so at
most --max-runners runners of one tenant work at once across all the
machines that run this program (the others queue for a slot); a runner
whose lease is lost stops.

    python3 examples/job_runner.py --servers 127.0.0.1:11215 \\
        --tenant acme --jobs 100 --units 5 --workers 4 --max-runners 2
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
from dataclasses import dataclass, field

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "clients", "python", "src"))

import mccounter  # noqa: E402


@dataclass
class Report:
    """What a run did: jobs run, throttled charges by reason, and the
    highest per-second usage the server reported after an allowed
    charge."""
    done: int = 0
    throttled: dict[str, int] = field(default_factory=dict)
    peak_used: int = 0


async def charge(client: mccounter.AsyncClient, tenant: str, units: int,
                 report: Report) -> None:
    """Charges units to the tenant, sleeping out each throttled answer."""
    while True:
        ans = await client.throttle(tenant, units)
        if ans.allowed:
            report.peak_used = max(report.peak_used, ans.used)
            return
        why = ans.reason.name.lower()
        report.throttled[why] = report.throttled.get(why, 0) + 1
        await asyncio.sleep(ans.retry_after)


async def worker(client: mccounter.AsyncClient, tenant: str,
                 lease: mccounter.AsyncLease, queue: asyncio.Queue,
                 units: int, report: Report) -> None:
    """Runs jobs from the queue while the runner's slot is held."""
    while not queue.empty():
        if lease.lost:
            raise RuntimeError("runner slot lost: %s" % lease.lost_reason)
        job = queue.get_nowait()
        await charge(client, tenant, units, report)
        await job()
        report.done += 1


async def run(servers: str, tenant: str, jobs: int, units: int,
              workers: int, max_runners: int = 2) -> Report:
    """Runs jobs (each a no-op standing in for real work) for a tenant
    with workers concurrent tasks, once this runner holds one of the
    tenant's max_runners slots."""
    report = Report()
    queue: asyncio.Queue = asyncio.Queue()
    for _ in range(jobs):
        queue.put_nowait(lambda: asyncio.sleep(0))
    async with mccounter.AsyncClient(servers) as c:
        # One slot per runner process (a connection holds one wait per
        # name); the lease renews itself every second and is released
        # on the way out.
        slot = await c.wait_acquire("runners:" + tenant, 1, max_runners,
                                    wait=60, lease=3,
                                    auto_renew=True)
        async with slot:
            await asyncio.gather(*(worker(c, tenant, slot, queue, units,
                                          report)
                                   for _ in range(workers)))
    return report


def main() -> int:
    """Runs the jobs and prints the report."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", required=True, help="host:port[:w],...")
    ap.add_argument("--tenant", required=True)
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--units", type=int, default=1, help="units per job")
    ap.add_argument("--workers", type=int, default=4,
                    help="concurrent jobs in this runner")
    ap.add_argument("--max-runners", type=int, default=2,
                    help="runners of one tenant allowed at once")
    a = ap.parse_args()
    r = asyncio.run(run(a.servers, a.tenant, a.jobs, a.units, a.workers,
                        a.max_runners))
    print("jobs done: %d; throttled charges: %s; peak units in a second: %d"
          % (r.done, r.throttled or "none", r.peak_used))
    return 0


if __name__ == "__main__":
    sys.exit(main())
