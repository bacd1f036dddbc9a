"""Capstan's own top-level packages, `storage`, `server` and `gateway`, imported from beside `capstan` whatever
sys.path puts first.

Those names are common: a project with a `server/` package of its own that starts Capstan from its directory
(`python -m capstan`, which puts the working directory first on sys.path), or with PYTHONPATH naming it, would
otherwise have its package imported where Capstan's belongs, and Capstan would die on its first import of
`server.auth`. The console script claims the three before it imports anything of them: a finder first on
sys.meta_path finds each in the directory that holds the running `capstan` package (site-packages for an
installed wheel, the checkout for an editable install), and every submodule then comes from that package's own
directory. Nothing else on sys.path moves, so every other import resolves as the caller's environment says, and
nothing is imported before it is needed.

Contract: `claim()` imports only the standard library; calling it again changes nothing; a package already
imported from elsewhere in this process (only possible when Capstan is embedded in a program that imported its
own first) raises ShadowedPackage naming both places, rather than running with the wrong one. Where the three
are not beside `capstan` (an unusual install), the import system finds them as it would.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence
from pathlib import Path

import capstan

OWN = ("storage", "server", "gateway")  # the order they import one another in: storage needs neither of the others


class ShadowedPackage(ImportError):
    """One of Capstan's package names was already imported from another directory."""


def root() -> Path:
    """The directory holding the running `capstan` package, and beside it Capstan's other packages."""
    return Path(capstan.__file__).resolve().parent.parent


class _OwnFinder(importlib.abc.MetaPathFinder):
    """Finds the top-level packages in OWN in one directory, and nothing else."""

    def __init__(self, where: Path) -> None:
        self.where = str(where)

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in OWN:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [self.where])


def claim() -> None:
    where = root()
    if any(isinstance(finder, _OwnFinder) for finder in sys.meta_path):
        return
    if any(importlib.machinery.PathFinder.find_spec(name, [str(where)]) is None for name in OWN):
        return  # not laid out beside capstan: the import system finds them as it would
    for name in OWN:
        loaded = sys.modules.get(name)
        origin = getattr(loaded, "__file__", None)
        if loaded is not None and (origin is None or not Path(origin).resolve().is_relative_to(where / name)):
            raise ShadowedPackage(f"Capstan's package {name!r} is in {where}, but this process already imported "
                                  f"another {name!r} from {origin}")
    sys.meta_path.insert(0, _OwnFinder(where))
