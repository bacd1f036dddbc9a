"""The audit log backend: lumberjack's rotation (size in megabytes, its backup names, at most maxbackup old
files), a 0600 file, and "-" as standard output."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest

from server.auth.audit.backend import MEGABYTE, LogBackend, backup_name

LINE = b"x" * 1023 + b"\n"
BACKUP = re.compile(r"audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log")


def test_backup_name_is_lumberjacks() -> None:
    moment = datetime.datetime(2026, 11, 26, 16, 11, 9, 123456, tzinfo=datetime.UTC)
    assert backup_name(Path("/var/log/audit.log"), moment) == Path("/var/log/audit-2026-11-26T16-11-09.123.log")


@pytest.mark.parametrize(("lines", "maxbackup", "backups"), [
    (1024, 0, 0),  # exactly 1 MB: no rotation yet
    (1025, 0, 1),
    (5 * 1024 + 1, 0, 5),  # 0 keeps every backup
    (5 * 1024 + 1, 2, 2),
])
def test_rotation(tmp_path: Path, lines: int, maxbackup: int, backups: int) -> None:
    path = tmp_path / "audit.log"
    backend = LogBackend(str(path), maxsize_mb=1, maxbackup=maxbackup)
    for _ in range(lines):
        assert backend.write(LINE)
    backend.close()
    rotated = sorted(p.name for p in tmp_path.iterdir() if p != path)
    assert len(rotated) == backups and all(BACKUP.fullmatch(name) for name in rotated)
    sizes = [p.stat().st_size for p in tmp_path.iterdir()]
    assert all(size <= MEGABYTE for size in sizes)
    if maxbackup == 0:
        assert sum(sizes) == lines * len(LINE)  # nothing lost across rotations
    assert path.stat().st_mode & 0o777 == 0o600


def test_reopened_file_keeps_counting(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.write_bytes(LINE * 1024)
    backend = LogBackend(str(path), maxsize_mb=1)
    assert backend.write(LINE)
    backend.close()
    assert path.read_bytes() == LINE and len(list(tmp_path.iterdir())) == 2


def test_dash_is_standard_output(capfd: pytest.CaptureFixture[str]) -> None:
    backend = LogBackend("-")
    assert backend.write(b'{"kind":"Event"}\n')
    backend.close()
    assert capfd.readouterr().out == '{"kind":"Event"}\n'


@pytest.mark.parametrize(("writers", "lines", "backups"), [
    (2, 1025, 1),
    (3, 5 * 1024 + 1, 5),
])
def test_shared_file_rotates_as_one_writers(tmp_path: Path, writers: int, lines: int, backups: int) -> None:
    """Several processes' backends on one file (the workers of one server), writing in turn: the file rotates
    at the size asked, as one writer's would, and no line goes to a renamed file."""
    path = tmp_path / "audit.log"
    backends = [LogBackend(str(path), maxsize_mb=1, shared=True) for _ in range(writers)]
    for n in range(lines):
        assert backends[n % writers].write(LINE)
    for backend in backends:
        backend.close()
    logs = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    rotated = sorted(p.name for p in logs if p != path)
    assert len(rotated) == backups and all(BACKUP.fullmatch(name) for name in rotated)
    sizes = [p.stat().st_size for p in logs]
    assert all(size == MEGABYTE for size in sizes if size != path.stat().st_size)  # each backup full, none over
    assert sum(sizes) == lines * len(LINE)
