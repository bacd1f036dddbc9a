"""`--workers N`: N serving processes over one LMDB environment and one set of ports, and the parent that
supervises them.

One Python process serves on one core at most. `capstan serve --workers N` (and `capstan core`) runs N copies
of the same command as worker processes: each binds the same HTTPS and gRPC ports with SO_REUSEPORT, so the
kernel spreads connections over them, and opens the same LMDB environment, whose write lock orders every
worker's transactions into one sequence of revisions. The parent only supervises, so it imports nothing but
the standard library, and runs under CPython's allocator (the workers start under allocator.py's choice):

- It makes one eventfd per worker, inherited by every worker (a restarted one too), through which the workers
  wake one another after each commit (storage/lmdb/peers.py).
- It starts the workers one at a time, each once the one before serves: the first creates what is created
  once (the generated certificates, the bootstrap objects) and picks any port given as 0; the others are
  told the ports it bound, which they then share. A worker reports that it serves, and its ports, as one line
  on a pipe (`CAPSTAN_WORKER_READY`).
- It makes a private directory (0700) for the sockets through which the workers ask one another
  (capstan/cli/workerpeers.py), and removes it when it exits; one that a killed parent left is removed by the
  next parent to start.
- It holds the data directory's lock (storage/lmdb/datalock.py) for as long as it runs, and its workers
  inherit it (`CAPSTAN_DATA_LOCK_FD`): another server on the same data directory is refused, its own workers
  are not.
- A worker that exits while the server runs is started again (at most once a second); what it acknowledged
  is on disk. If the first worker cannot start, the server cannot: the parent stops and exits as it did.
- SIGTERM or SIGINT is passed to every worker, each drains as a single process does (listeners first, then
  what was acknowledged is committed), and the parent exits once all have. Each worker dies with the parent
  (PR_SET_PDEATHSIG), so none outlives a parent that was killed.

`--workers 1` runs the command in this process, without any of this. Singletons (the controllers, the
compactor's turns) need nothing here: they are elected through the store, as between cores.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence

WORKER_ENV = "CAPSTAN_WORKER"  # the worker's index, in a worker's environment
FDS_ENV = "CAPSTAN_WORKER_FDS"  # storage/lmdb/peers.py's: the worker's own eventfd, then the others'
READY_ENV = "CAPSTAN_WORKER_READY"  # the pipe a worker writes its ports to, as one JSON line, once it serves
COUNT_ENV = "CAPSTAN_WORKERS"  # how many workers the server runs, in a worker's environment
DIR_ENV = "CAPSTAN_WORKER_DIR"  # a private directory (0700) of the parent's, for the workers' sockets
DIR_PREFIX = "capstan-workers-"  # then the parent's pid and a random part: <tmp>/capstan-workers-<pid>-<random>
LOCK_ENV = "CAPSTAN_DATA_LOCK_FD"  # storage/lmdb/datalock.py's: the data directory's lock, held by the parent
LOCK_FILE = "capstan.lock"  # storage/lmdb/datalock.py's, in <data-dir>/lmdb
COMMANDS = frozenset({"serve", "core"})
MAX_WORKERS = 8
START_TIMEOUT = 120.0  # seconds a worker may take to serve
RESTART_INTERVAL = 1.0  # seconds at least between two starts of one worker
STOP_GRACE = 5.0  # seconds a worker stopped while starting has to exit before it is killed
STOP_POLL = 0.1  # seconds between looks at whether the server stops, while a worker starts
PORT_FLAGS = {"https": "--secure-port", "http": "--http-port", "grpc": "--grpc-port", "grpc_mtls": "--grpc-mtls-port"}
PR_SET_PDEATHSIG = 1


def default_workers() -> int:
    """The usable cores, at most MAX_WORKERS."""
    return max(1, min(len(os.sched_getaffinity(0)), MAX_WORKERS))


def workers_asked(argv: Sequence[str]) -> int:
    """The worker count a `serve` or `core` command line asks for (1 for any other command, or for a value
    the command's own parser will refuse); an absent --workers means auto, except with --fault-injection, whose
    rules (a test's) live in one process's memory and so ask for one."""
    if _command(argv) not in COMMANDS:
        return 1
    value = _flag(argv, "--workers")
    if value is None and "--fault-injection" in argv:
        return 1
    if value is None or value == "auto":
        return default_workers()
    return int(value) if value.isdigit() and int(value) >= 1 else 1


def _flag(argv: Sequence[str], name: str) -> str | None:
    value: str | None = None
    for i, word in enumerate(argv):
        if word == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif word.startswith(name + "="):
            value = word.partition("=")[2]
    return value


def lock_data_dir(argv: Sequence[str]) -> int | None:
    """The data directory's lock, as storage/lmdb/datalock.py takes it, for the workers to inherit (None: the
    store is etcd's). Exits 1 with datalock's message when another process holds it."""
    if _flag(argv, "--etcd-servers"):
        return None
    data_dir = _flag(argv, "--data-dir") or "data"
    directory = os.path.join(data_dir, "lmdb")
    os.makedirs(data_dir, mode=0o700, exist_ok=True)  # private as the server makes it (makedirs gives the
    os.makedirs(directory, mode=0o700, exist_ok=True)  # mode to the last directory only)
    path = os.path.join(directory, LOCK_FILE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
        pid = f" (pid {holder})" if holder.isdigit() else ""
        print(f"capstan: the data directory {directory} is in use by another process{pid} (it holds {path}): stop"
              " it first, or use another --data-dir", file=sys.stderr)
        sys.exit(1)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _command(argv: Sequence[str]) -> str | None:
    return next((word for word in argv if not word.startswith("-")), None)


def worker_index(environ: Mapping[str, str]) -> int | None:
    """This process's index when it is a worker, else None."""
    text = environ.get(WORKER_ENV)
    return None if text is None else int(text)


def worker_count(environ: Mapping[str, str]) -> int:
    """How many workers serve beside this one, itself included (1 when it is alone)."""
    text = environ.get(COUNT_ENV, "1")
    return int(text) if text.isdigit() and int(text) >= 1 else 1


def report_ready(environ: Mapping[str, str], ports: Mapping[str, int]) -> None:
    """In a worker: tell the parent it serves, on which ports."""
    text = environ.get(READY_ENV)
    if text is None:
        return
    fd = int(text)
    os.write(fd, (json.dumps(dict(ports)) + "\n").encode())
    os.close(fd)


class Supervisor:
    def __init__(self, count: int, argv: Sequence[str], lock_fd: int | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        self.count = count
        self.lock_fd = lock_fd
        self.argv = list(argv)  # the interpreter's command line, run again for each worker
        self.environ = dict(os.environ if environ is None else environ)  # the workers' environment
        self.eventfds = [os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC) for _ in range(count)]
        self.ports: dict[str, int] = {}
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.started: dict[int, float] = {}
        self.stopping = False
        self.directory = private_directory()

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._stop)
        try:
            failed = 0
            for index in range(self.count):
                if self.stopping:
                    break
                if not self._start(index):
                    if self.stopping:  # stopped while it started: it exits as asked, or is made to
                        self._reap(index, grace=STOP_GRACE)
                        break
                    failed = self._reap(index)
                    self._stop(signal.SIGTERM, None)
                    break
            return self._supervise() or failed
        finally:
            for fd in self.eventfds:
                os.close(fd)
            shutil.rmtree(self.directory, ignore_errors=True)

    def _stop(self, signum: int, frame: object) -> None:
        self.stopping = True
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)

    def _command_line(self, index: int) -> list[str]:
        extra = [word for key, flag in PORT_FLAGS.items() if key in self.ports
                 for word in (flag, str(self.ports[key]))]
        return [*self.argv, *extra]

    def _start(self, index: int) -> bool:
        """Start worker `index` and wait until it serves; False when it exited instead."""
        read_end, write_end = os.pipe()
        own = self.eventfds[index]
        fds = [own, *(fd for i, fd in enumerate(self.eventfds) if i != index)]
        env = {**self.environ, WORKER_ENV: str(index), FDS_ENV: ",".join(map(str, fds)), READY_ENV: str(write_end),
               COUNT_ENV: str(self.count), DIR_ENV: self.directory}
        inherited: tuple[int, ...] = ()
        if self.lock_fd is not None:
            env[LOCK_ENV] = str(self.lock_fd)
            inherited = (self.lock_fd,)
        self.started[index] = time.monotonic()
        try:
            proc = subprocess.Popen(self._command_line(index), env=env,
                                    pass_fds=(*self.eventfds, write_end, *inherited),
                                    preexec_fn=_die_with_parent)  # the parent has one thread
        finally:
            os.close(write_end)
        self.procs[index] = proc
        if self.stopping:  # the signal came between its start and now: _stop did not see it
            proc.send_signal(signal.SIGTERM)
        try:
            line = _read_line(read_end, START_TIMEOUT, lambda: self.stopping)
        finally:
            os.close(read_end)
        if not line:
            return False
        if not self.ports:
            self.ports = {key: int(port) for key, port in json.loads(line).items() if key in PORT_FLAGS}
        return True

    def _reap(self, index: int, grace: float = 0.0) -> int:
        """The exit code of worker `index`, which failed to start or was stopped while starting (killed if it
        is still trying after `grace` seconds: it has answered nothing yet)."""
        proc = self.procs.pop(index)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
        code = proc.wait()
        return code if code > 0 else 1

    def _supervise(self) -> int:
        """Wait for the workers, starting again any that exits while the server runs; the worst exit code."""
        worst = 0
        while self.procs:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            index = next((i for i, proc in self.procs.items() if proc.pid == pid), None)
            if index is None:
                continue
            proc = self.procs.pop(index)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if self.stopping:
                worst = worst or (proc.returncode if proc.returncode > 0 else 0)
                continue
            print(f"capstan: worker {index} exited ({proc.returncode}); starting it again", file=sys.stderr)
            time.sleep(max(0.0, self.started[index] + RESTART_INTERVAL - time.monotonic()))
            if self.stopping or self._start(index):
                continue
            if self.stopping:  # stopped while it started again
                self._reap(index, grace=STOP_GRACE)
            else:
                print(f"capstan: worker {index} did not start again; stopping", file=sys.stderr)
                worst = self._reap(index)
                self._stop(signal.SIGTERM, None)
        return worst


def _read_line(fd: int, timeout: float, stopping: Callable[[], bool]) -> bytes:
    """One line from `fd`; b"" when the writer closed it first (the worker exited), after `timeout`, or once
    `stopping()`."""
    data = b""
    deadline = time.monotonic() + timeout
    while not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or stopping():
            return b""
        ready, _, _ = select.select([fd], [], [], min(remaining, STOP_POLL))
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                return b""
            data += chunk
    return data


def private_directory(base: str | None = None) -> str:
    """A new directory (0700) for the workers' sockets, in `base` (the temporary directory when None), named for
    this parent. A parent that is killed (SIGKILL, the OOM killer) cannot remove its own, so the directories
    that parents gone that way left are removed first."""
    base = base or tempfile.gettempdir()
    sweep(base)
    return tempfile.mkdtemp(prefix=f"{DIR_PREFIX}{os.getpid()}-", dir=base)


def sweep(base: str) -> None:
    """Remove the workers' directories in `base` that their parent left (see _left)."""
    try:
        with os.scandir(base) as entries:
            left = [entry.path for entry in entries if entry.name.startswith(DIR_PREFIX) and _left(entry)]
    except OSError:
        return
    for path in left:
        shutil.rmtree(path, ignore_errors=True)


def _left(entry: os.DirEntry[str]) -> bool:
    """Whether a workers' directory was left behind: this user's, its parent's pid not running, unchanged for
    longer than a worker takes to start (a parent that has just made it has no sockets in it yet), and no
    socket in it accepting a connection (a server in another pid namespace that shares this directory looks
    gone by its pid, but its workers answer)."""
    pid = entry.name[len(DIR_PREFIX):].partition("-")[0]
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    if (not pid.isdigit() or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid()
            or time.time() - info.st_mtime < START_TIMEOUT or _running(int(pid))):
        return False
    try:
        with os.scandir(entry.path) as inside:
            return not any(_accepts(path.path) for path in inside)
    except OSError:
        return False


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: another user's process
        return True
    return True


def _accepts(path: str) -> bool:
    """Whether something listens on the Unix socket at `path` (the connection is closed at once: a worker
    answers an empty question with nothing, workerpeers.py)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (so a killed parent leaves no worker)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def supervise(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> None:
    """If this command line asks for several workers and this process is not one, supervise them and exit.
    `environ`: the workers' environment (this process's when None)."""
    if worker_index(os.environ) is not None:
        return
    count = workers_asked(argv)
    if count <= 1 or not sys.executable or len(sys.orig_argv) < 2:
        return
    sys.exit(Supervisor(count, [sys.executable, *sys.orig_argv[1:]], lock_data_dir(argv), environ).run())
