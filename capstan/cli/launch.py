"""The `capstan` console script: start again under the allocator allocator.py chooses, then run the command.

The command's modules (commands.py and every layer below it) are imported only after that step, so starting
again costs one interpreter start, not the server's imports.
"""

from __future__ import annotations

import sys

from capstan.cli import allocator


def main() -> None:
    allocator.start_again(sys.argv[1:])
    from capstan.cli.commands import main as run

    run()
