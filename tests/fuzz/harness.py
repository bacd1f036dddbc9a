"""One real Capstan for a fuzzing run, driven from synchronous code: hypothesis calls a plain function per
example, so the servers live on an event loop in a thread of their own and each request is handed to it.

The servers are the ones `capstan serve` and `capstan gateway --core` run: LMDB in a scratch directory, the
core's grpc.aio server on a loopback port, and two aiohttp gateways over it (in-process and over a gRPC
channel). Every check the fuzz suites make lives here, so `make test` and `python -m bench.fuzz` judge alike.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import grpc
import orjson
import yaml
from grpc_status import rpc_status
from hypothesis import HealthCheck, settings
from yarl import URL

from capstan.api.meta.v1 import meta_pb2
from capstan.cli.inprocess import InProcessClient
from gateway.app import build_app, start_http
from gateway.client import CoreClient
from gateway.codecs import protobuf as protobuf_codec
from gateway.transport.grpc import GrpcClient
from server.auth.config import INSECURE
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

T = TypeVar("T")
TIMEOUT = 10.0  # seconds one exchange may take: past it the server is stuck, which is a finding
# Seconds /readyz may take after a batch of examples: an event loop a request stalled longer is a finding. Less
# is the machine's: the suite's workers outnumber the cores, and a probe can wait seconds for one of them.
READY_WITHIN = 5.0
SERVICE = "/capstan.core.v1.CoreService/"

# The only 5xx kube-apiserver itself answers to a request it could parse (apimachinery's errors): 503
# ServiceUnavailable and 504 Timeout from storage, both with Retry-After, and 507 past the storage quota.
RETRIED_5XX = frozenset({503, 504})
QUOTA_5XX = 507
# And one 500 by design: a strategic merge patch that strategicpatch cannot apply for a reason other than the
# few interpretStrategicMergePatchError turns into 400/422 ("expected a []interface {}, but received a
# map[string]interface {}", "does not contain declared merge key") is returned as is, so kube answers 500 with
# no reason (ErrorToAPIStatus of a plain error); Capstan answers the same.
SMP = "application/strategic-merge-patch+json"
# The gRPC codes those map to (server/machinery/errors.py); INTERNAL and UNKNOWN are a 500 by another name.
ALLOWED_GRPC_FAILURES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
NEVER_GRPC = frozenset({grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.DATA_LOSS})


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One request as sent: `target` is the path and query already percent-encoded, sent byte for byte."""

    method: str
    target: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    transport: str = "inprocess"  # which gateway: "inprocess" or "grpc"

    def reproducer(self) -> str:
        """A curl line that sends the same request to a `capstan serve --insecure` on :8080."""
        hdrs = " ".join(f"-H {h!r}" for h in (f"{k}: {v}" for k, v in self.headers))
        data = "" if self.body is None else f" --data-binary @body.bin  # body.bin = {self.body!r}"
        return f"curl -sS -X {self.method} {hdrs} 'http://127.0.0.1:8080{self.target}'{data}"


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class GrpcAnswer:
    code: grpc.StatusCode
    details: str
    status: meta_pb2.Status | None  # the Kubernetes Status in the rich error details, when there is one


class Errors(logging.Handler):
    """Every ERROR (or worse) record logged with a traceback while it is attached."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.exc_text or "Traceback" in record.getMessage():
            self.records.append(record)

    def take(self) -> list[str]:
        found = [f"{r.name}: {r.getMessage()}\n{logging.Formatter().formatException(r.exc_info)}"
                 if r.exc_info else f"{r.name}: {r.getMessage()}" for r in self.records]
        self.records.clear()
        return found


class Capstan:
    """The servers, on their own loop in a daemon thread; `call` runs a coroutine there and waits."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fuzz-capstan", daemon=True)
        self.urls: dict[str, str] = {}
        self.errors = Errors()
        self._closers: list[Any] = []

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = TIMEOUT) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(asyncio.wait_for(coro, timeout), self.loop)
        return future.result(timeout + 5)

    def start(self) -> None:
        self.thread.start()
        logging.getLogger().addHandler(self.errors)
        self.call(self._start(), 60)

    async def _start(self) -> None:
        store = await LmdbStore.open(self.root / "lmdb", StoreOptions(sync=False, compact_interval=0, future_wait=0.5))
        self.store = store
        self.core: RunningCore = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE,
                                                  namespace_controllers=False)
        self.grpc_address = f"127.0.0.1:{self.core.grpc_port}"
        clients: dict[str, CoreClient] = {"inprocess": InProcessClient(self.core.guard),
                                          "grpc": GrpcClient(self.grpc_address)}
        for name, client in clients.items():
            runner, port = await start_http(build_app(client), "127.0.0.1", 0)
            self.urls[name] = f"http://127.0.0.1:{port}"
            self._closers += [runner.cleanup, client.close]
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT))
        self.channel = grpc.aio.insecure_channel(self.grpc_address)

    def stop(self) -> None:
        logging.getLogger().removeHandler(self.errors)
        try:
            self.call(self._stop(), 60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)

    async def _stop(self) -> None:
        await self.session.close()
        await self.channel.close()
        for close in self._closers:
            await close()
        await self.core.stop()
        await self.store.close()

    # HTTP

    def http(self, request: HttpRequest) -> HttpAnswer:
        return self.call(self._http(request))

    async def _http(self, request: HttpRequest) -> HttpAnswer:
        url = URL(self.urls[request.transport] + request.target, encoded=True)
        headers = dict(request.headers)
        skip = () if "Content-Type" in headers else ("Content-Type",)
        async with self.session.request(request.method, url, data=request.body, headers=headers,
                                        skip_auto_headers=skip) as resp:
            # A 2xx may be a watch that streams until its timeout: its status and headers are the answer.
            body = await resp.read() if resp.status >= 300 else b""
            return HttpAnswer(resp.status, {k: v for k, v in resp.headers.items()}, body)

    def ready_within(self, seconds: float = READY_WITHIN) -> float:
        """/readyz on both gateways answers 200 within `seconds`; the slower one's time."""
        async def probe() -> float:
            worst = 0.0
            for url in self.urls.values():
                started = time.monotonic()
                async with self.session.get(url + "/readyz") as resp:
                    await resp.read()
                    assert resp.status == 200, f"/readyz answered {resp.status}"
                worst = max(worst, time.monotonic() - started)
            return worst

        took = self.call(probe(), seconds + 5)
        assert took < seconds, f"/readyz took {took:.3f} s"
        return took

    def seed(self, method: str, path: str, body: dict[str, Any]) -> None:
        """A write the fuzzed requests start from (201, or 409 if already there)."""
        async def post() -> None:
            async with self.session.request(method, self.urls["inprocess"] + path, json=body) as resp:
                assert resp.status in (200, 201, 409), await resp.text()

        self.call(post())

    # gRPC

    def grpc(self, method: str, request: bytes, *, streaming: bool = False) -> GrpcAnswer:
        return self.call(self._grpc(method, request, streaming))

    async def _grpc(self, method: str, request: bytes, streaming: bool) -> GrpcAnswer:
        try:
            if streaming:
                stream: Any = self.channel.unary_stream(SERVICE + method)
                call = stream(request, timeout=2.0)
                accepted = False
                try:
                    # The core sends the initial metadata once it has accepted the watch (server/service/servicer.py);
                    # an accepted watch that has nothing to send (no timeoutSeconds, no events) streams until the
                    # client's deadline, as a watch does.
                    await call.initial_metadata()
                    accepted = not call.done()
                    async for _ in call:
                        break  # the first event shows the watch was accepted
                except grpc.aio.AioRpcError as err:
                    if not (accepted and err.code() == grpc.StatusCode.DEADLINE_EXCEEDED):
                        raise
                finally:
                    call.cancel()
            else:
                unary: Any = self.channel.unary_unary(SERVICE + method)
                await unary(request, timeout=TIMEOUT - 1)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.CANCELLED:
                return GrpcAnswer(grpc.StatusCode.OK, "", None)
            return GrpcAnswer(err.code(), err.details() or "", _status_of(err))
        return GrpcAnswer(grpc.StatusCode.OK, "", None)


def _status_of(err: grpc.aio.AioRpcError) -> meta_pb2.Status | None:
    rich = rpc_status.from_call(err)
    if rich is None:
        return None
    for detail in rich.details:
        status = meta_pb2.Status()
        if detail.Unpack(status):
            return status
    return None


@contextmanager
def running(root: Path) -> Iterator[Capstan]:
    capstan = Capstan(root)
    capstan.start()
    try:
        yield capstan
    finally:
        capstan.stop()


# The properties every answer must have.

def http_problems(request: HttpRequest, answer: HttpAnswer) -> list[str]:
    """What is wrong with the answer (empty: nothing): a 5xx kube would not answer, or an error without a Status."""
    problems = []
    status = answer.status
    if status >= 500 and not (status == QUOTA_5XX or (status in RETRIED_5XX and "Retry-After" in answer.headers)
                              or _kubes_own_smp_500(request, answer)):
        problems.append(f"answered {status}")
    if status >= 400 and request.method != "HEAD":
        problem = status_body_problem(answer)
        if problem:
            problems.append(problem)
    return problems


def _kubes_own_smp_500(request: HttpRequest, answer: HttpAnswer) -> bool:
    if answer.status != 500 or request.method != "PATCH" or dict(request.headers).get("Content-Type") != SMP:
        return False
    doc = _status_doc(answer)
    return not doc.get("reason") and not str(doc.get("message", "")).startswith("Internal")


def _status_doc(answer: HttpAnswer) -> dict[str, Any]:
    """The body as a Status document in the answer's Content-Type; ValueError if it is none."""
    kind = answer.headers.get("Content-Type", "").split(";")[0].strip()
    try:
        if kind == "application/json":
            doc = orjson.loads(answer.body)
        elif kind == "application/yaml":
            doc = yaml.safe_load(answer.body)
        elif kind == "application/vnd.kubernetes.protobuf":
            _, envelope_kind, raw = protobuf_codec.decode_envelope(answer.body)
            message = meta_pb2.Status.FromString(raw)
            doc = {"kind": envelope_kind, "code": message.code, "reason": message.reason, "message": message.message}
        else:
            raise ValueError(f"answered as {kind!r}")
    except Exception as err:
        raise ValueError(f"body is not a {kind} Status ({err}): {answer.body[:200]!r}") from err
    if not isinstance(doc, dict) or doc.get("kind") != "Status":
        raise ValueError(f"body is not a Status: {answer.body[:200]!r}")
    return doc


def status_body_problem(answer: HttpAnswer) -> str:
    """'' if the body is a Kubernetes Status carrying the answer's code, in the answer's Content-Type."""
    try:
        doc = _status_doc(answer)
    except ValueError as err:
        return f"{answer.status} {err}"
    if doc.get("code") != answer.status:
        return f"{answer.status} body is a Status with code {doc.get('code')}: {answer.body[:200]!r}"
    return ""


def grpc_problems(answer: GrpcAnswer, *, strategic: bool = False) -> list[str]:
    """A gRPC failure must be one kube would answer, carrying its Status in the rich error details; `strategic`:
    the call was a strategic merge patch, whose reasonless 500 is kube's own (above)."""
    if answer.code == grpc.StatusCode.OK:
        return []
    if strategic and answer.status is not None and answer.status.code == 500 and not answer.status.reason \
            and not answer.status.message.startswith("Internal"):
        return []
    if answer.code in NEVER_GRPC:
        return [f"answered {answer.code.name}: {answer.details[:300]}"]
    if answer.status is None:
        return [f"{answer.code.name} without a Kubernetes Status in its details: {answer.details[:300]}"]
    if answer.status.code >= 500 and answer.status.code != QUOTA_5XX and not (
            answer.status.code in RETRIED_5XX and answer.status.details.retryAfterSeconds):
        return [f"a {answer.status.code} Status: {answer.status.message[:300]}"]
    return []


def budget(examples: int) -> settings:
    """The hypothesis settings of a fuzz test in `make test`: a fixed number of examples, derandomized, no example
    database, no per-example deadline (the machine is shared). Hypothesis still mixes constants from the source
    of the local modules a process has loaded, and other state of earlier tests on the same worker, into what it
    draws, so the examples of one run differ from another's with what ran before them: every example a judge
    can meet must pass, not only the ones one run drew."""
    return settings(max_examples=examples, derandomize=True, database=None, deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


class Judge:
    """Sends each example and says what is wrong with its answer; /readyz is asked every BATCH examples."""

    BATCH = 25

    def __init__(self, capstan: Capstan) -> None:
        self.capstan = capstan
        self.sent = 0

    def _after(self) -> list[str]:
        self.sent += 1
        if self.sent % self.BATCH == 0:
            self.capstan.ready_within()
        return [f"logged: {record}" for record in self.capstan.errors.take()]

    def http(self, request: HttpRequest) -> tuple[HttpAnswer, list[str]]:
        answer = self.capstan.http(request)
        return answer, http_problems(request, answer) + self._after()

    def grpc(self, method: str, request: bytes) -> tuple[GrpcAnswer, list[str]]:
        answer = self.capstan.grpc(method, request, streaming=method == "Watch")
        return answer, grpc_problems(answer, strategic=method == "Patch" and _strategic(request)) + self._after()


def _strategic(request: bytes) -> bool:
    from capstan.core.v1 import core_service_pb2

    try:
        return core_service_pb2.PatchRequest.FromString(request).type == core_service_pb2.PATCH_TYPE_STRATEGIC_MERGE
    except Exception:
        return False
