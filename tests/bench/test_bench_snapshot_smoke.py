"""The snapshot benchmark runs end to end at --quick sizes and prints what it promises. It asserts the shape of
the output and that every copy held the right objects, never the speed."""

from __future__ import annotations

from tests.bench.quick import run_quick


def test_every_figure_is_printed_and_every_copy_is_right() -> None:
    lines = run_quick("bench.snapshot")
    assert [line["op"] for line in lines] == ["save", "status", "check", "restore", "defrag", "load", "crc32"]
    assert all(line["ok"] for line in lines), lines
    save, defrag = lines[0], lines[4]
    assert save["snapshot_bytes"] <= save["data_file_bytes"]
    assert defrag["after_bytes"] <= defrag["before_bytes"]
