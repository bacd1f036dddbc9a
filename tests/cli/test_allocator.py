"""The `capstan` command's allocator step (capstan/cli/allocator.py): which commands start again under
jemalloc, with
what environment, and a real `capstan serve` process that does (its memory maps name the library)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from capstan.cli.allocator import JEMALLOC_CONF, AllocatorError, describe, find_jemalloc, plan

ROOT = Path(__file__).resolve().parents[2]
LIB = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
STARTED = {"PYTHONMALLOC": "malloc", "LD_PRELOAD": LIB, "MALLOC_CONF": JEMALLOC_CONF}


@pytest.mark.parametrize(("argv", "environ", "found", "expected"), [
    (["serve", "--insecure"], {}, LIB, STARTED),
    (["--verbose", "core"], {}, LIB, STARTED),  # the subcommand is the first word that is not an option
    (["gateway", "--core", "a:1"], {"CAPSTAN_ALLOCATOR": "jemalloc"}, LIB, STARTED),
    # what the operator set is kept: their preloads after ours, their jemalloc settings
    (["serve"], {"LD_PRELOAD": "/opt/libx.so"}, LIB, {**STARTED, "LD_PRELOAD": f"{LIB} /opt/libx.so"}),
    (["serve"], {"MALLOC_CONF": "narenas:2"}, LIB, {**STARTED, "MALLOC_CONF": "narenas:2"}),
    # nothing to do: the short commands, CPython's allocator asked for, PYTHONMALLOC already chosen (this is
    # also what stops a started-again process from starting again), no jemalloc on the machine
    (["kubeconfig"], {}, LIB, None),
    ([], {}, LIB, None),
    (["serve"], {"CAPSTAN_ALLOCATOR": "python"}, LIB, None),
    (["serve"], {"PYTHONMALLOC": "malloc"}, LIB, None),
    (["serve"], {"PYTHONMALLOC": "pymalloc"}, LIB, None),
    (["serve"], {}, None, None),
    (["serve"], {"CAPSTAN_ALLOCATOR": "auto"}, None, None),
])
def test_plan(argv: list[str], environ: dict[str, str], found: str | None,
              expected: dict[str, str] | None) -> None:
    planned = plan(argv, environ, lambda: found)
    assert planned == (None if expected is None else {**environ, **expected})


@pytest.mark.parametrize(("environ", "message"), [
    ({"CAPSTAN_ALLOCATOR": "jemalloc"}, "no jemalloc library is installed"),
    ({"CAPSTAN_ALLOCATOR": "tcmalloc"}, "expected auto, jemalloc or python"),
])
def test_plan_refuses(environ: dict[str, str], message: str) -> None:
    with pytest.raises(AllocatorError, match=message):
        plan(["serve"], environ, lambda: None)


@pytest.mark.parametrize(("environ", "said"), [
    ({}, "CPython's own"),
    (STARTED, f"jemalloc ({LIB}, MALLOC_CONF={JEMALLOC_CONF})"),
    ({"PYTHONMALLOC": "malloc"}, "PYTHONMALLOC=malloc"),
])
def test_describe(environ: dict[str, str], said: str) -> None:
    assert describe(environ).startswith(said)


def _serve(tmp_path: Path, allocator: str, workers: int = 1) -> subprocess.Popen[str]:
    """`capstan serve`; with one worker the process started is the server."""
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONMALLOC", "LD_PRELOAD", "MALLOC_CONF")}
    return subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--insecure", "--data-dir", str(tmp_path / "data"),
         "--http-port", "0", "--grpc-port", "0", "--grpc-mtls-port", "-1", "--workers", str(workers)],
        cwd=ROOT, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**environ, "PYTHONUNBUFFERED": "1", "CAPSTAN_ALLOCATOR": allocator})


def _jemalloc_mapped(pid: int) -> bool | None:
    """Whether jemalloc is mapped into `pid`, which its environment must agree with; None while they disagree: a
    process read between fork and exec, or during the exec, has one program's environment and the other's maps."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    mapped = "libjemalloc" in Path(f"/proc/{pid}/maps").read_text()
    return mapped if (b"PYTHONMALLOC=malloc" in environ) == mapped else None


def _until_serving(proc: subprocess.Popen[str]) -> list[str]:
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "capstan serving:" in line:
            return lines
    raise AssertionError(f"capstan serve exited with {proc.wait()}: {''.join(lines)[-2000:]}")


@pytest.mark.skipif(find_jemalloc() is None, reason="jemalloc is not installed (Debian: libjemalloc2)")
@pytest.mark.parametrize(("allocator", "jemalloc"), [("auto", True), ("jemalloc", True), ("python", False)])
async def test_serve_runs_under_the_allocator_asked_for(tmp_path: Path, allocator: str, jemalloc: bool) -> None:
    proc = _serve(tmp_path, allocator)
    try:
        said = "".join(_until_serving(proc))
        # the process the caller started is the server (exec keeps the process id), mapped as asked
        assert _jemalloc_mapped(proc.pid) == jemalloc
        assert ("memory allocator: jemalloc" in said) == jemalloc
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(proc.wait, 10)
    assert code == 0


@pytest.mark.skipif(find_jemalloc() is None, reason="jemalloc is not installed (Debian: libjemalloc2)")
@pytest.mark.parametrize(("allocator", "jemalloc"), [("auto", True), ("python", False)])
async def test_workers_run_under_the_allocator_and_their_parent_under_cpythons(
    tmp_path: Path, allocator: str, jemalloc: bool
) -> None:
    """The supervising parent serves nothing: it is not started again under jemalloc; its workers start under it."""
    proc = _serve(tmp_path, allocator, workers=2)
    try:
        said = "".join(_until_serving(proc))
        assert _jemalloc_mapped(proc.pid) is False
        # The first worker serving is what the parent announces; the second may still be between fork and exec
        # (its maps its parent's until the exec), so each worker is read until it has exec'd.
        deadline = time.monotonic() + 10
        while True:
            children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            mapped = [_jemalloc_mapped(int(child)) for child in children]
            if (len(children) == 2 and mapped == [jemalloc] * 2) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        assert mapped == [jemalloc] * 2
        assert ("memory allocator: jemalloc" in said) == jemalloc
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(proc.wait, 20)
    assert code == 0


@pytest.mark.parametrize("workers", [1, 2])
def test_an_unknown_allocator_is_refused_before_serving(tmp_path: Path, workers: int) -> None:
    proc = _serve(tmp_path, "tcmalloc", workers)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "CAPSTAN_ALLOCATOR='tcmalloc': expected auto, jemalloc or python" in err
    assert not (tmp_path / "data").exists()
