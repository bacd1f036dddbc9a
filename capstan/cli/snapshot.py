"""`capstan snapshot save|restore|status`, `capstan check` and `capstan defrag`: backing up, checking and
compacting the LMDB store, as etcdctl/etcdutl do etcd's.

`snapshot save` runs beside the server, as a second process reading the data directory (storage/lmdb/snapshot.py):
LMDB serves readers in any process without stopping its writers, so a consistent copy at one revision needs no
call into the server, no credentials and no new API, and works the same on a stopped server. A store in etcd
(--etcd-servers) is backed up and restored with etcd's own tools, which keep its members and revisions: these
commands refuse it and say so.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from storage import files
from storage.errors import BackendFailure
from storage.lmdb import datalock
from storage.lmdb import snapshot as snapshots
from storage.lmdb.integrity import DATA_FILE, Report

ETCD_REFUSAL = (
    "the store is in etcd (--etcd-servers): back it up with `etcdctl snapshot save FILE` and restore it with"
    " `etcdutl snapshot restore FILE`, etcd's own tools; capstan snapshots only its LMDB store")


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    snapshot = commands.add_parser("snapshot", help="save, check and restore snapshots of the LMDB store")
    actions = snapshot.add_subparsers(dest="snapshot_command", required=True)
    save = actions.add_parser("save", help="write a consistent copy of the store at one revision to FILE, while"
                                           " it serves")
    save.add_argument("file", type=Path, metavar="FILE")
    _data_dir(save)
    status = actions.add_parser("status", help="a snapshot's revision, object count, size and hash, once its"
                                               " integrity and every value are verified")
    status.add_argument("file", type=Path, metavar="FILE")
    status.add_argument("-w", "--write-out", choices=("table", "json", "simple"), default="table",
                        help="output format, as etcdctl's (default table)")
    restore = actions.add_parser("restore", help="a new data directory holding the snapshot's store")
    restore.add_argument("file", type=Path, metavar="FILE")
    _data_dir(restore, help="the data directory to create (it must not exist, or be empty)")
    check = commands.add_parser("check", help="verify every value of the store in --data-dir (served or not)")
    _data_dir(check)
    defrag = commands.add_parser("defrag", help="rewrite the stopped store in --data-dir without its free pages")
    _data_dir(defrag)


def _data_dir(parser: argparse.ArgumentParser, help: str = "the server's data directory (default ./data)") -> None:
    parser.add_argument("--data-dir", type=Path, default=Path("data"), help=help)
    parser.add_argument("--etcd-servers", default="", metavar="URL[,URL...]",
                        help="when the store is etcd's: refused, with what to use instead")


def run(args: argparse.Namespace) -> None:
    if getattr(args, "etcd_servers", ""):
        raise BackendFailure(ETCD_REFUSAL)
    if args.command == "snapshot" and args.snapshot_command == "status":
        _print_status(snapshots.status(args.file), args.write_out)
        return
    lmdb_dir = args.data_dir / "lmdb"
    if args.command == "check":
        report = snapshots.check(lmdb_dir)
        print(f"{lmdb_dir / DATA_FILE}: revision {report.revision}, {report.objects} objects, {report.log_entries}"
              f" log entries, hash {report.hash:x}: every value verified")
    elif args.command == "defrag":
        lock = datalock.acquire(lmdb_dir)
        try:
            before, after = snapshots.defrag(lmdb_dir)
        finally:
            lock.release()
        print(f"defragmented {lmdb_dir / DATA_FILE}: {_bytes(before)} -> {_bytes(after)} ({before} -> {after}"
              " bytes)")
    elif args.snapshot_command == "save":
        saved = snapshots.save(lmdb_dir, args.file)
        print(f"Snapshot saved at {args.file} (revision {saved.report.revision}, {saved.report.objects} objects,"
              f" {_bytes(saved.size)})")
    else:
        _restore(args.file, args.data_dir)


def _restore(file: Path, data_dir: Path) -> None:
    if data_dir.exists() and any(data_dir.iterdir()):
        raise BackendFailure(f"the data directory {data_dir} exists and is not empty: restore into a new one")
    files.private_dir(data_dir)
    restored = snapshots.restore(file, data_dir / "lmdb")
    print(f"restored {file} into {data_dir}: revision {restored.report.revision},"
          f" {restored.report.objects} objects")


def _print_status(snapshot: snapshots.Snapshot, form: str) -> None:
    report: Report = snapshot.report
    if form == "json":
        print(json.dumps({"hash": report.hash, "revision": report.revision, "totalKey": report.objects,
                          "totalSize": snapshot.size, "compacted": report.compacted, "format": report.format},
                         separators=(",", ":")))  # as Go's encoding/json writes it
        return
    row = [f"{report.hash:x}", str(report.revision), str(report.objects), _bytes(snapshot.size)]
    if form == "simple":
        print(", ".join(row))
        return
    headers = ["HASH", "REVISION", "TOTAL KEYS", "TOTAL SIZE"]
    widths = [max(len(h), len(c)) for h, c in zip(headers, row, strict=True)]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    sys.stdout.write("\n".join([
        rule,
        "|" + "|".join(f" {h.center(w)} " for h, w in zip(headers, widths, strict=True)) + "|",
        rule,
        "|" + "|".join(f" {c.rjust(w)} " for c, w in zip(row, widths, strict=True)) + "|",
        rule,
    ]) + "\n")


def _bytes(size: int) -> str:
    """go-humanize's Bytes, as etcdctl prints sizes: SI units, one decimal under 10."""
    if size < 10:
        return f"{size} B"
    units = ["B", "kB", "MB", "GB", "TB", "PB"]
    value = float(size)
    unit = 0
    while value >= 1000 and unit < len(units) - 1:
        value /= 1000
        unit += 1
    return f"{value:.1f} {units[unit]}" if value < 10 else f"{value:.0f} {units[unit]}"
