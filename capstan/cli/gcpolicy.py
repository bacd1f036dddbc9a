"""The garbage collector's settings for a serving process, so health checks and small requests stay prompt under load.

CPython's defaults (700, 10, 10) suit short scripts: under bench.load's 2,000 clients they run a full collection
15 times in 20 s, 280 ms each (430 ms at most) over the process's ~1 million objects, 4.2 s in all, and
a collection holds the interpreter: the event loop and the health port's thread both stop for it. Once a
server has started, what it loaded (modules, schemas, the registry: ~115,000 tracked objects) lives as long
as the process, so it is frozen out of every collection (gc.freeze), and the young generation is collected
every THRESHOLDS[0] allocations net rather than 700, the older ones rarely: under the same load no full
collection runs and the loop's p99 lag is half (docs/performance.md, bench.load). Cycles are still collected;
garbage that is not cyclic never waited for the collector.
"""

from __future__ import annotations

import gc

# A young collection per 10,000 allocations net (its pause grows with them: 70-120 ms at 50,000 under
# bench.load, 27-36 ms at 10,000, the total alike); the middle one per 100 young ones (1 million
# allocations), the full one per 100 middle ones.
THRESHOLDS = (10_000, 100, 100)


def after_start() -> None:
    """Call once the process has started serving: collects, freezes what survives, sets THRESHOLDS and turns
    the collector on (the console script starts with it off, launch.py)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    gc.enable()
