"""The `capstan` console script: start again under the allocator allocator.py chooses, then run the command.

The command's modules (commands.py and every layer below it) are imported only after that step, so starting
again costs one interpreter start, not the server's imports. The cyclic garbage collector is off from then
until the server has started (gcpolicy.after_start collects once and turns it on): what start-up allocates
(modules, schemas, the registry) lives as long as the process, so the ~240 collections the imports would
trigger, two of them full, find almost nothing to free and cost ~30-50 ms of every start.
"""

from __future__ import annotations

import gc
import sys

from capstan.cli import allocator


def main() -> None:
    allocator.start_again(sys.argv[1:])
    gc.disable()
    from capstan.cli.commands import main as run

    run()
