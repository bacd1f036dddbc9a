"""The `capstan` console script: start again under the allocator allocator.py chooses, supervise the workers
when asked for several (workers.py), else run the command.

The command's modules (commands.py and every layer below it) are imported only after that step, so starting
again costs one interpreter start, not the server's imports.
"""

from __future__ import annotations

import sys

from capstan.cli import allocator, workers


def main() -> None:
    allocator.start_again(sys.argv[1:])
    workers.supervise(sys.argv[1:])  # with --workers N > 1 this process supervises the workers, then exits
    from capstan.cli.commands import main as run

    run()
