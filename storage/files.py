"""Stored data is private to the server's user: directories 0700, files 0600, whatever the umask.

The store holds Secrets, so its directories and files are kept as etcd keeps its data dir
(fileutil.PrivateDirMode / PrivateFileMode). A directory or file found looser (made by an older
Capstan, or by hand) is tightened with a warning: etcd 3.5 only warns ("checking file permission"),
which leaves the data readable; tightening a path we own is safe and idempotent, and refusing to
start would break every existing install on upgrade.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> None:
    """Create `path` (and missing parents) or tighten it, so that it is exactly DIR_MODE."""
    if not path.exists():
        path.mkdir(parents=True, mode=DIR_MODE)  # parents get the umask's mode; only `path` is ours
    _tighten(path, DIR_MODE)


def private_file(path: Path) -> None:
    """Tighten an existing file to exactly FILE_MODE (a missing one is left missing)."""
    if path.exists():
        _tighten(path, FILE_MODE)


def _tighten(path: Path, mode: int) -> None:
    current = stat.S_IMODE(path.stat().st_mode)
    if current == mode:
        return
    if current & ~mode:
        log.warning("%s had permission %s, which lets other users read the data; changed to %s",
                    path, stat.filemode(path.stat().st_mode), _filemode(path, mode))
    os.chmod(path, mode)


def _filemode(path: Path, mode: int) -> str:
    return stat.filemode((stat.S_IFDIR if path.is_dir() else stat.S_IFREG) | mode)
