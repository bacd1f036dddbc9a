"""Watch through a real gRPC channel: where a stream starts, what it selects, how it ends.

Each table row is a case of the spec's watch semantics (api-concepts.md, "Efficient
detection of changes", "Watch bookmarks", "Semantics for watch") or of kube-apiserver's
behaviour where the spec is silent (streaming lists, selector transitions, 410/504
Statuses). Every stream is read by a background pump (`Events`), so a read that times
out fails the test without tearing the stream down, and "nothing arrives" can be asserted.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2

from capstan.api.core.v1 import core_pb2 as core_v1
from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from server.machinery import errors
from server.objects import watch as core_watch
from server.startup import apienablement
from server.startup.apienablement import ApiEnablement
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests.server.client import Client, Failed, path

Obj = dict[str, Any]

# kube's WatchList feature gate on (off by default in 1.28): most tables here watch with initial events.
WATCH_LIST = apienablement.runtime_config([], apienablement.feature_gates(["WatchList=true"]))


@pytest.fixture
def enablement() -> ApiEnablement:
    return WATCH_LIST

TIMEOUT = 5.0  # the longest any single await may take before the test fails instead of hanging
QUIET = 0.3  # how long "no event arrives" is watched for
END = object()  # what the pump queues when the stream ends

CM = path("configmaps", "default")
ALL_CM = path("configmaps")
NAMESPACES = path("namespaces")
HOLD = "example.com/hold"
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


# -- helpers ---------------------------------------------------------------------------


def config_map(name: str, *, labels: dict[str, str] | None = None, data: dict[str, str] | None = None,
               finalizers: Sequence[str] = ()) -> Obj:
    metadata: Obj = {"name": name}
    if labels is not None:
        metadata["labels"] = labels
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data or {"k": "v"}}


def cm_path(name: str, namespace: str = "default") -> core_pb2.ResourcePath:
    return path("configmaps", namespace, name)


def rv(obj: Obj) -> int:
    return int(obj["metadata"]["resourceVersion"])


def summary(events: Sequence[tuple[str, Obj]]) -> list[tuple[str, str, int]]:
    """(type, name, resourceVersion) of each event: what a table row expects."""
    return [(kind, obj["metadata"].get("name", ""), rv(obj)) for kind, obj in events]


class WatchFailed(Exception):
    """A watch call failed before streaming; `status` is the Kubernetes Status it carried, as a dict."""

    def __init__(self, code: grpc.StatusCode, status: meta_pb2.Status) -> None:
        super().__init__(f"{code}: {status.message}")
        self.grpc_code = code
        self.status: Obj = json_format.MessageToDict(status, preserving_proto_field_name=True)


def grpc_failure(err: grpc.aio.AioRpcError) -> WatchFailed:
    """The Kubernetes Status a failed call carries in its rich error details (google.rpc.Status)."""
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            assert isinstance(value, bytes)
            rich = status_pb2.Status.FromString(value)
            status = meta_pb2.Status()
            assert rich.details[0].Unpack(status)
            return WatchFailed(err.code(), status)
    return WatchFailed(err.code(), meta_pb2.Status(message=f"no Kubernetes Status: {err.details()}"))


class Events:
    """One open watch. A background task pumps its events into a queue (started at once
    unless `start=False`, for a client that does not read)."""

    def __init__(self, responses: AsyncIterator[core_pb2.WatchResponse], cancel: Callable[[], object],
                 *, start: bool = True) -> None:
        self._responses = responses
        self._cancel = cancel
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        if start:
            self.start()

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        try:
            async for response in self._responses:
                for event in response.events:
                    self._queue.put_nowait(event)
        except grpc.aio.AioRpcError as err:
            self._queue.put_nowait(grpc_failure(err))
        except errors.ApiError as err:  # a watch called in-process raises the core's error itself
            self._queue.put_nowait(WatchFailed(errors.GRPC_CODES[err.code], err.status))
        finally:
            self._queue.put_nowait(END)

    async def _item(self, timeout: float = TIMEOUT) -> Any:
        try:
            return await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            raise AssertionError(f"no watch event within {timeout} s") from None

    async def raw(self) -> core_pb2.WatchEvent:
        item = await self._item()
        if item is END:
            raise AssertionError("the watch ended")
        if isinstance(item, WatchFailed):
            raise item
        assert isinstance(item, core_pb2.WatchEvent)
        return item

    async def next(self) -> tuple[str, Obj]:
        event = await self.raw()
        assert event.object.encoding == core_pb2.ENCODING_JSON
        return event.type, orjson.loads(event.object.data)

    async def take(self, count: int) -> list[tuple[str, Obj]]:
        return [await self.next() for _ in range(count)]

    async def quiet(self, seconds: float = QUIET) -> None:
        """Nothing arrives (no event, no end) for `seconds`."""
        try:
            item = await asyncio.wait_for(self._queue.get(), seconds)
        except TimeoutError:
            return
        raise AssertionError(f"expected nothing, got {item}")

    async def rest(self) -> list[tuple[str, Obj]]:
        """Every event until the stream ends cleanly."""
        out: list[tuple[str, Obj]] = []
        while True:
            item = await self._item()
            if item is END:
                return out
            if isinstance(item, WatchFailed):
                raise item
            out.append((item.type, orjson.loads(item.object.data)))

    async def failure(self) -> WatchFailed:
        item = await self._item()
        assert isinstance(item, WatchFailed), f"expected the call to fail, got {item}"
        return item

    async def close(self) -> None:
        self._cancel()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def __aenter__(self) -> Events:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def watch(client: Client, p: core_pb2.ResourcePath, *, accept: core_pb2.Encoding = core_pb2.ENCODING_JSON,
          start: bool = True, **options: Any) -> Events:
    """A Watch call over the client's real channel."""
    call = client.stub.Watch(core_pb2.WatchRequest(path=p, options=options, accept=accept))
    return Events(call, call.cancel, start=start)


def watch_in_process(running: RunningCore, p: core_pb2.ResourcePath, *, bookmark_interval: float,
                     accept: core_pb2.Encoding = core_pb2.ENCODING_JSON, **options: Any) -> Events:
    """The core's watch called directly, for what needs a short bookmark interval."""
    request = core_pb2.WatchRequest(path=p, options=options, accept=accept)
    stream = core_watch.watch(running.core.context, request, bookmark_interval=bookmark_interval)
    return Events(stream, lambda: None)


async def within(awaitable: Any, timeout: float = TIMEOUT) -> Any:
    return await asyncio.wait_for(awaitable, timeout)


async def create(client: Client, obj: Obj, namespace: str = "default") -> Obj:
    out: Obj = await within(client.create(path("configmaps", namespace), obj))
    return out


async def replace(client: Client, obj: Obj, **changes: Any) -> Obj:
    """Update `obj` (unconditionally: its resourceVersion is dropped) with top-level or metadata changes."""
    body = {**obj, **{k: v for k, v in changes.items() if k != "metadata"}}
    body["metadata"] = {**obj["metadata"], **changes.get("metadata", {})}
    body["metadata"].pop("resourceVersion", None)
    meta = body["metadata"]
    updated, _ = await within(client.update(cm_path(meta["name"], meta.get("namespace", "default")), body))
    out: Obj = updated
    return out


def current(running: RunningCore) -> int:
    return running.core.context.store.current_revision()


# -- where a watch starts (the spec's watch table) -----------------------------------------

# Before the watch: a@1 created, b created, a modified (a@2). The rows name revisions by
# those labels; after the rows' events, b is modified live (b@2) and must follow.
START = [
    pytest.param(lambda r: "", [("ADDED", "a", "a@2"), ("ADDED", "b", "b@1")], id="unset-state-then-changes"),
    pytest.param(lambda r: "0", [("ADDED", "a", "a@2"), ("ADDED", "b", "b@1")], id="zero-state-then-changes"),
    pytest.param(lambda r: str(r["a@1"]), [("ADDED", "b", "b@1"), ("MODIFIED", "a", "a@2")], id="exact-replays"),
    pytest.param(lambda r: str(r["b@1"]), [("MODIFIED", "a", "a@2")], id="exact-no-synthetic-added"),
    pytest.param(lambda r: str(r["a@2"]), [], id="exact-current-only-live"),
]


@pytest.mark.parametrize(("resource_version", "before_live"), START)
async def test_start(client: Client, resource_version: Callable[[dict[str, int]], str],
                     before_live: list[tuple[str, str, str]]) -> None:
    a = await create(client, config_map("a"))
    b = await create(client, config_map("b"))
    a2 = await replace(client, a, data={"k": "2"})
    revs = {"a@1": rv(a), "b@1": rv(b), "a@2": rv(a2)}
    async with watch(client, CM, resourceVersion=resource_version(revs)) as events:
        got = await events.take(len(before_live))  # for unset/"0": proof the watch has started
        b2 = await replace(client, b, data={"k": "2"})
        revs["b@2"] = rv(b2)
        got += await events.take(1)
        await events.quiet()
    assert summary(got) == [(t, n, revs[r]) for t, n, r in [*before_live, ("MODIFIED", "b", "b@2")]]
    assert got[-1][1]["data"] == {"k": "2"}
    assert all(obj["kind"] == "ConfigMap" and obj["apiVersion"] == "v1" for _, obj in got)


@pytest.mark.parametrize(
    ("start", "expired"),
    [
        pytest.param(lambda compacted: 1, True, id="ancient"),
        pytest.param(lambda compacted: compacted - 1, True, id="just-compacted"),
        pytest.param(lambda compacted: compacted, False, id="oldest-retained"),
    ],
)
async def test_compacted_start_is_an_expired_error_event(
    client: Client, running: RunningCore, start: Callable[[int], int], expired: bool
) -> None:
    obj = await create(client, config_map("a"))
    for i in range(3):
        obj = await replace(client, obj, data={"k": str(i)})
    compacted = rv(obj)
    await within(running.core.context.store.compact(compacted))
    from_rv = start(compacted)
    async with watch(client, CM, resourceVersion=str(from_rv)) as events:
        if expired:
            kind, status = await events.next()
            assert kind == "ERROR"
            assert status == {
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": f"too old resource version: {from_rv} ({compacted})", "reason": "Expired", "code": 410,
            }
            assert await events.rest() == []  # the stream ends after the error
        else:
            changed = await replace(client, obj, data={"k": "live"})
            assert summary(await events.take(1)) == [("MODIFIED", "a", rv(changed))]


async def test_compaction_does_not_affect_state_then_changes(client: Client, running: RunningCore) -> None:
    obj = await create(client, config_map("a"))
    obj = await replace(client, obj, data={"k": "2"})
    await within(running.core.context.store.compact(rv(obj)))
    async with watch(client, CM) as events:
        assert summary(await events.take(1)) == [("ADDED", "a", rv(obj))]


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"sendInitialEvents": True, "resourceVersionMatch": "NotOlderThan",
                      "allowWatchBookmarks": True}, id="initial-events-not-older-than"),
    ],
)
async def test_future_start_times_out_with_504(client: Client, running: RunningCore, options: Obj) -> None:
    """Initial events are sent only once the store has reached the revision: kube's cacher waits for it, and gives
    up with its 504."""
    await create(client, config_map("a"))
    now = current(running)
    future = now + 100
    started = time.monotonic()
    async with watch(client, CM, resourceVersion=str(future), **options) as events:
        failed = await events.failure()
    assert time.monotonic() - started >= 0.4  # it waited (future_wait is 0.5 s) before giving up
    assert failed.grpc_code == grpc.StatusCode.DEADLINE_EXCEEDED
    status = failed.status
    assert (status["code"], status["reason"], status["status"]) == (504, "Timeout", "Failure")
    # apimachinery's NewTooLargeResourceVersionError is a NewTimeoutError, which prefixes "Timeout: ".
    assert status["message"] == f"Timeout: Too large resource version: {future}, current: {now}"
    assert status["details"]["causes"] == [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]
    assert status["details"]["retryAfterSeconds"] == 1


async def test_a_future_start_passes_over_the_changes_up_to_it(client: Client, running: RunningCore) -> None:
    """A watch of the changes after a revision the store has not reached starts at once, with no error however
    long it waits, and sends the changes after that revision, as kube-apiserver 1.28's watch cache does (beside
    it: an empty stream until timeoutSeconds, then only the later objects)."""
    a = await create(client, config_map("a"))
    future = rv(a) + 2
    async with watch(client, CM, resourceVersion=str(future), allowWatchBookmarks=True) as events:
        await asyncio.sleep(0.7)  # longer than the store's wait (future_wait 0.5 s): still no failure
        b = await create(client, config_map("b"))
        c = await create(client, config_map("c"))
        assert rv(c) == future
        d = await create(client, config_map("d"))
        assert summary(await events.take(1)) == [("ADDED", "d", rv(d))]  # not b nor c
        await events.quiet()
    assert rv(b) < future


async def test_future_start_reached_while_waiting(client: Client, running: RunningCore) -> None:
    """A resourceVersion that arrives within the wait is a normal exact start."""
    a = await create(client, config_map("a"))
    future = rv(a) + 1
    async with watch(client, CM, resourceVersion=str(future)) as events:
        await asyncio.sleep(0.1)  # the watch is waiting for `future`
        b = await create(client, config_map("b"))
        assert rv(b) == future
        a2 = await replace(client, a, data={"k": "2"})
        assert summary(await events.take(1)) == [("MODIFIED", "a", rv(a2))]  # changes after `future` only
        await events.quiet()


# -- selection: label and field selectors, namespaces, one object ---------------------------

# (labels before, labels after or None for a delete, the event the `app=web` watcher sees)
LABEL_TRANSITIONS = [
    pytest.param({"app": "db"}, {"app": "web"}, "ADDED", id="enters-selection"),
    pytest.param({"app": "web"}, {"app": "db"}, "DELETED", id="leaves-selection"),
    pytest.param({"app": "web"}, {"app": "web", "tier": "1"}, "MODIFIED", id="stays-selected"),
    pytest.param({"app": "db"}, {"app": "db", "tier": "1"}, None, id="never-selected"),
    pytest.param({"app": "web"}, None, "DELETED", id="deleted-while-selected"),
    pytest.param({"app": "db"}, None, None, id="deleted-while-not-selected"),
    pytest.param({}, {"app": "web"}, "ADDED", id="gains-the-label"),
    pytest.param({"app": "web"}, {}, "DELETED", id="loses-the-label"),
]


@pytest.mark.parametrize(("before", "after", "expected"), LABEL_TRANSITIONS)
async def test_label_selector_transitions(
    client: Client, running: RunningCore, before: dict[str, str], after: dict[str, str] | None, expected: str | None
) -> None:
    obj = await create(client, config_map("x", labels=before, data={"k": "old"}))
    async with watch(client, CM, resourceVersion=str(rv(obj)), labelSelector="app=web") as events:
        if after is None:
            await within(client.delete(cm_path("x")))
            changed_at = current(running)
        else:
            changed = await replace(client, obj, data={"k": "new"}, metadata={"labels": after})
            changed_at = rv(changed)
        sentinel = await create(client, config_map("sentinel", labels={"app": "web"}))
        got = await events.take(2 if expected else 1)
        await events.quiet()
    want = [("ADDED", "sentinel", rv(sentinel))]
    if expected:
        want.insert(0, (expected, "x", changed_at))
    assert summary(got) == want
    if expected == "DELETED":  # the old object (still selected) at the new resourceVersion
        assert got[0][1]["metadata"]["labels"] == before
        assert got[0][1]["data"] == {"k": "old"}
    elif expected:
        assert got[0][1]["metadata"]["labels"] == after
        assert got[0][1]["data"] == {"k": "new"}


@pytest.mark.parametrize(
    ("field_selector", "expected"),
    [
        pytest.param("status.phase=Active", [("DELETED", "Active")], id="leaves-active"),
        pytest.param("status.phase=Terminating", [("ADDED", "Terminating"), ("DELETED", "Terminating")],
                     id="enters-terminating-then-goes"),
        pytest.param("status.phase!=Active", [("ADDED", "Terminating"), ("DELETED", "Terminating")],
                     id="not-active"),
        pytest.param("metadata.name=other", [("MODIFIED", "Terminating"), ("DELETED", "Terminating")],
                     id="by-name"),
    ],
)
async def test_field_selector_transitions(
    client: Client, running: RunningCore, field_selector: str, expected: list[tuple[str, str]]
) -> None:
    """Deleting a namespace moves it from phase Active to Terminating (a MODIFIED); the namespace
    controller then empties and deletes it (a DELETED)."""
    ns = await within(client.create(NAMESPACES, {"metadata": {"name": "other"}}))
    async with watch(client, NAMESPACES, resourceVersion=str(rv(ns)), fieldSelector=field_selector) as events:
        marked = await within(client.delete(path("namespaces", name="other")))
        got = await events.take(len(expected))
        await events.quiet()
    assert [(kind, obj["status"]["phase"]) for kind, obj in got] == expected
    assert {obj["metadata"]["name"] for _, obj in got} == {"other"}
    assert marked["status"]["phase"] == "Terminating"
    assert rv(got[0][1]) == rv(marked)  # entering or leaving happens at the marking write
    assert [kind for kind, _ in got].count("DELETED") == 1


@pytest.mark.parametrize(
    ("namespace", "field_selector", "expected"),
    [
        pytest.param("default", "", ["d1", "d2"], id="one-namespace"),
        pytest.param("other", "", ["o1"], id="another-namespace"),
        pytest.param("", "", ["d1", "o1", "d2"], id="all-namespaces"),
        pytest.param("", "metadata.namespace=other", ["o1"], id="all-namespaces-field-selected"),
        pytest.param("", "metadata.namespace!=other", ["d1", "d2"], id="all-namespaces-but-one"),
        pytest.param("", "metadata.name=d2", ["d2"], id="all-namespaces-one-name"),
        pytest.param("", "metadata.namespace=default,metadata.name!=d1", ["d2"], id="name-and-namespace"),
        pytest.param("other", "metadata.name=o1", ["o1"], id="one-namespace-one-name"),
        pytest.param("missing", "", [], id="empty-namespace"),
    ],
)
async def test_namespace_scope(
    client: Client, namespace: str, field_selector: str, expected: list[str]
) -> None:
    ns = await within(client.create(NAMESPACES, {"metadata": {"name": "other"}}))
    async with watch(client, path("configmaps", namespace), resourceVersion=str(rv(ns)),
                     fieldSelector=field_selector) as events:
        await create(client, config_map("d1"))
        await create(client, config_map("o1"), "other")
        await create(client, config_map("d2"))
        got = await events.take(len(expected))
        await events.quiet()
    assert [(kind, obj["metadata"]["name"]) for kind, obj in got] == [("ADDED", name) for name in expected]
    assert [rv(obj) for _, obj in got] == sorted(rv(obj) for _, obj in got)


async def test_single_object_watch(client: Client, running: RunningCore) -> None:
    start = current(running)
    async with watch(client, CM, resourceVersion=str(start), fieldSelector="metadata.name=x") as events:
        x = await create(client, config_map("x"))
        y = await create(client, config_map("y"))
        await replace(client, y, data={"k": "y2"})
        x2 = await replace(client, x, data={"k": "x2"})
        await within(client.delete(cm_path("y")))
        await within(client.delete(cm_path("x")))
        deleted_at = current(running)
        got = await events.take(3)
        await events.quiet()
    assert summary(got) == [("ADDED", "x", rv(x)), ("MODIFIED", "x", rv(x2)), ("DELETED", "x", deleted_at)]


# -- what each write emits -------------------------------------------------------------------


async def test_delete_emits_deleted_with_the_last_state(client: Client, running: RunningCore) -> None:
    obj = await create(client, config_map("a", labels={"app": "web"}))
    last = await replace(client, obj, data={"k": "last"})
    async with watch(client, CM, resourceVersion=str(rv(last))) as events:
        await within(client.delete(cm_path("a")))
        deleted_at = current(running)
        kind, deleted = await events.next()
        await events.quiet()
    assert (kind, rv(deleted)) == ("DELETED", deleted_at)
    assert deleted_at > rv(last)
    assert deleted["data"] == {"k": "last"}
    assert deleted["metadata"]["uid"] == obj["metadata"]["uid"]
    assert deleted["metadata"]["labels"] == {"app": "web"}


async def test_finalizer_deletion_is_modified_then_deleted(client: Client, running: RunningCore) -> None:
    obj = await create(client, config_map("a", finalizers=[HOLD]))
    async with watch(client, CM, resourceVersion=str(rv(obj))) as events:
        await within(client.delete(cm_path("a")))
        kind, marked = await events.next()
        assert kind == "MODIFIED"
        assert marked["metadata"]["deletionTimestamp"]
        assert marked["metadata"]["finalizers"] == [HOLD]
        await events.quiet()  # held: nothing more until the finalizer goes
        await replace(client, marked, metadata={"finalizers": []})
        deleted_at = current(running)
        kind, deleted = await events.next()
        await events.quiet()
    assert (kind, rv(deleted)) == ("DELETED", deleted_at)
    assert deleted_at > rv(marked)
    assert deleted["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]
    # kube-apiserver deletes the stored object (deleteWithoutFinalizers), so the event shows it as stored.
    assert deleted["metadata"]["finalizers"] == [HOLD]
    with pytest.raises(Failed) as gone:
        await within(client.get(cm_path("a")))
    assert gone.value.grpc_code == grpc.StatusCode.NOT_FOUND


async def test_noop_update_emits_nothing(client: Client, running: RunningCore) -> None:
    obj = await create(client, config_map("a", labels={"app": "web"}, data={"k": "v"}))
    async with watch(client, CM, resourceVersion=str(rv(obj))) as events:
        same, _ = await within(client.update(cm_path("a"), obj))  # exactly what was stored
        assert rv(same) == rv(obj)
        assert current(running) == rv(obj)
        await events.quiet()
        changed = await replace(client, obj, data={"k": "changed"})
        assert summary(await events.take(1)) == [("MODIFIED", "a", rv(changed))]


# -- bookmarks and streaming lists ---------------------------------------------------------------


def assert_bookmark(obj: Obj, resource_version: int, *, initial_events_end: bool = False) -> None:
    """A BOOKMARK object is the kind with nothing but metadata.resourceVersion (and the end annotation)."""
    assert set(obj) == {"kind", "apiVersion", "metadata"}
    assert (obj["kind"], obj["apiVersion"]) == ("ConfigMap", "v1")
    metadata = dict(obj["metadata"])
    assert metadata.pop("creationTimestamp", None) is None  # Go's zero time marshals as null
    expected: Obj = {"resourceVersion": str(resource_version)}
    if initial_events_end:
        expected["annotations"] = {INITIAL_EVENTS_END: "true"}
    assert metadata == expected


async def test_periodic_bookmarks(client: Client, running: RunningCore) -> None:
    obj = await create(client, config_map("a"))
    start = rv(obj)
    async with watch_in_process(running, CM, bookmark_interval=0.1, resourceVersion=str(start),
                                allowWatchBookmarks=True) as events:
        first = await events.take(2)
        for kind, bookmark in first:
            assert kind == "BOOKMARK"
            assert_bookmark(bookmark, start)
        changed = await replace(client, obj, data={"k": "2"})
        await create(client, config_map("b"), "kube-system")  # another prefix: the revision moves on
        end = current(running)
        after = [await events.next()]
        while after[-1][0] != "BOOKMARK" or rv(after[-1][1]) < end:
            after.append(await events.next())
    assert summary([e for e in after if e[0] != "BOOKMARK"]) == [("MODIFIED", "a", rv(changed))]
    assert_bookmark(after[-1][1], end)  # bookmarks report progress past other kinds' writes


async def test_no_bookmarks_unless_allowed(running: RunningCore) -> None:
    async with watch_in_process(running, CM, bookmark_interval=0.05, resourceVersion=str(current(running))) as events:
        await events.quiet()


async def test_bookmarks_never_run_ahead_of_events(client: Client, running: RunningCore) -> None:
    """A BOOKMARK says every change up to its resourceVersion was sent: nothing older may follow it.

    An interval of 0 makes the bookmark timer expire on every loop iteration, so each of the
    many writes below has a chance to land between a timer and the watcher taking its events."""
    start = current(running)
    writes = 1200
    async with watch_in_process(running, CM, bookmark_interval=0.0, resourceVersion=str(start),
                                allowWatchBookmarks=True) as events:
        async def write(i: int) -> None:
            await create(client, config_map(f"c{i}"))

        for first in range(0, writes, 20):
            await within(asyncio.gather(*(write(i) for i in range(first, first + 20))))
        end = current(running)
        seen: list[tuple[str, int]] = []
        while not seen or seen[-1][1] < end or seen[-1][0] != "BOOKMARK":
            kind, obj = await events.next()
            seen.append((kind, rv(obj)))
    changes = [r for kind, r in seen if kind != "BOOKMARK"]
    assert changes == list(range(start + 1, end + 1))
    bad = [i for i in range(1, len(seen)) if seen[i][1] < seen[i - 1][1]]
    assert not bad, [seen[max(0, i - 4) : i + 3] for i in bad[:3]]
    assert any(kind == "BOOKMARK" for kind, r in seen if r < end)  # bookmarks were interleaved


STREAMING: Obj = {"sendInitialEvents": True, "resourceVersionMatch": "NotOlderThan", "allowWatchBookmarks": True}


@pytest.mark.parametrize(
    ("resource_version", "label_selector", "initial"),
    [
        pytest.param(lambda r: "", "", ["a", "b", "c"], id="consistent"),
        pytest.param(lambda r: "0", "", ["a", "b", "c"], id="any"),
        pytest.param(lambda r: str(r["a"]), "", ["a", "b", "c"], id="not-older-than-past"),
        pytest.param(lambda r: str(r["c"]), "", ["a", "b", "c"], id="not-older-than-current"),
        pytest.param(lambda r: "", "app=web", ["a", "c"], id="selected"),
        pytest.param(lambda r: "", "app=none", [], id="nothing-selected"),
    ],
)
async def test_send_initial_events(
    client: Client, running: RunningCore, resource_version: Callable[[dict[str, int]], str],
    label_selector: str, initial: list[str],
) -> None:
    revs: dict[str, int] = {}
    for name, app in (("a", "web"), ("b", "db"), ("c", "web")):
        revs[name] = rv(await create(client, config_map(name, labels={"app": app})))
    synced = current(running)
    async with watch(client, CM, resourceVersion=resource_version(revs), labelSelector=label_selector,
                     **STREAMING) as events:
        got = await events.take(len(initial) + 1)
        live = await create(client, config_map("d", labels={"app": "web"}))
        if label_selector != "app=none":
            assert summary(await events.take(1)) == [("ADDED", "d", rv(live))]
        await events.quiet()
    assert summary(got[:-1]) == [("ADDED", name, revs[name]) for name in initial]
    kind, bookmark = got[-1]
    assert kind == "BOOKMARK"
    assert_bookmark(bookmark, synced, initial_events_end=True)


async def test_send_initial_events_false_starts_without_state(client: Client, running: RunningCore) -> None:
    a = await create(client, config_map("a"))
    options: Obj = {**STREAMING, "sendInitialEvents": False}
    async with watch(client, CM, resourceVersion=str(rv(a) - 1), **options) as events:  # exact: replays a's create
        assert summary(await events.take(1)) == [("ADDED", "a", rv(a))]
        await events.quiet()
    async with watch(client, CM, **options) as events:  # unset: from the most recent, no state
        await asyncio.sleep(0.1)
        b = await create(client, config_map("b"))
        assert summary(await events.take(1)) == [("ADDED", "b", rv(b))]
        await events.quiet()


async def test_send_initial_events_without_bookmarks_is_accepted(client: Client) -> None:
    """Kubernetes 1.32 dropped the rule that sendInitialEvents needs allowWatchBookmarks."""
    a = await create(client, config_map("a"))
    async with watch(client, CM, sendInitialEvents=True, resourceVersionMatch="NotOlderThan") as events:
        assert summary(await events.take(1)) == [("ADDED", "a", rv(a))]


INVALID = 'ListOptions.meta.k8s.io "" is invalid: '
NEEDS_NOT_OLDER_THAN = ("resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch "
                        "to NotOlderThan")
MATCH_NEEDS_INITIAL = ("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless "
                       "sendInitialEvents is provided")
GATED = ("sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate "
         "is enabled")


@pytest.mark.parametrize("enablement", [apienablement.DEFAULT], ids=["1.28 default gates"])
@pytest.mark.parametrize(("options", "message", "fields"), [
    pytest.param(STREAMING, GATED, ["sendInitialEvents"], id="initial events"),
    pytest.param({**STREAMING, "sendInitialEvents": False}, GATED, ["sendInitialEvents"], id="no initial events"),
    pytest.param({"sendInitialEvents": True}, f"[{NEEDS_NOT_OLDER_THAN}, {GATED}]",
                 ["resourceVersionMatch", "sendInitialEvents"], id="without match"),
])
async def test_sendinitialevents_needs_the_watchlist_gate(
    client: Client, options: Obj, message: str, fields: list[str]
) -> None:
    # kube-apiserver 1.28's ValidateListOptions with WatchList off (its default), as it answers beside Capstan
    async with watch(client, CM, **options) as events:
        failed = await events.failure()
    assert (failed.status["code"], failed.status["reason"]) == (422, "Invalid")
    assert failed.status["message"] == INVALID + message
    assert [cause["field"] for cause in failed.status["details"]["causes"]] == fields


@pytest.mark.parametrize(
    ("options", "message", "fields"),
    [
        pytest.param({"sendInitialEvents": True, "allowWatchBookmarks": True}, NEEDS_NOT_OLDER_THAN,
                     ["resourceVersionMatch"], id="initial-events-without-match"),
        pytest.param({"sendInitialEvents": False, "allowWatchBookmarks": True}, NEEDS_NOT_OLDER_THAN,
                     ["resourceVersionMatch"], id="initial-events-false-without-match"),
        pytest.param({"resourceVersionMatch": "NotOlderThan"}, MATCH_NEEDS_INITIAL, ["resourceVersionMatch"],
                     id="match-without-initial-events"),
        pytest.param({"resourceVersionMatch": "NotOlderThan", "resourceVersion": "5"}, MATCH_NEEDS_INITIAL,
                     ["resourceVersionMatch"], id="match-with-resource-version-without-initial-events"),
        pytest.param({"sendInitialEvents": True, "allowWatchBookmarks": True, "resourceVersionMatch": "Exact"},
                     f'[{NEEDS_NOT_OLDER_THAN}, resourceVersionMatch: Unsupported value: "Exact": '
                     'supported values: "NotOlderThan"]', ["resourceVersionMatch", "resourceVersionMatch"],
                     id="initial-events-with-exact-match"),
        pytest.param({"resourceVersionMatch": "Exact", "resourceVersion": "5"},
                     f'[{MATCH_NEEDS_INITIAL}, resourceVersionMatch: Unsupported value: "Exact": '
                     'supported values: "NotOlderThan"]', ["resourceVersionMatch", "resourceVersionMatch"],
                     id="exact-match"),
        pytest.param({**STREAMING, "continue": "token"},
                     "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided",
                     ["resourceVersionMatch"], id="match-with-continue"),
    ],
)
async def test_invalid_watch_options_are_422(
    client: Client, options: Obj, message: str, fields: list[str]
) -> None:
    async with watch(client, CM, **options) as events:
        failed = await events.failure()
    assert failed.grpc_code == grpc.StatusCode.INVALID_ARGUMENT
    status = failed.status
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["message"] == INVALID + message
    assert (status["details"]["kind"], status["details"]["group"]) == ("ListOptions", "meta.k8s.io")
    assert [cause["field"] for cause in status["details"]["causes"]] == fields


# -- the initial state in pages -----------------------------------------------------------------

PAGED = [
    # objects, page, options, the ADDED events in each message (then the BOOKMARK's message, if asked)
    (10, 3, {}, [3, 3, 3, 1]),
    (8, 4, {}, [4, 4]),
    (2, 500, {}, [2]),
    (10, 4, {"labelSelector": "even=true"}, [2, 2, 1]),  # a page is read, then filtered
    (6, 4, {"sendInitialEvents": True, "resourceVersionMatch": "NotOlderThan", "allowWatchBookmarks": True},
     [4, 2, 0]),
]


@pytest.mark.parametrize(("objects", "page", "options", "messages"), PAGED)
async def test_initial_state_is_sent_a_page_at_a_time(
    client: Client, running: RunningCore, objects: int, page: int, options: Obj, messages: list[int]
) -> None:
    """A watch holds at most one page of the initial state, rendered, however large the collection."""
    for i in range(objects):
        await create(client, config_map(f"c{i:02}", labels={"even": str(i % 2 == 0).lower()}))
    request = core_pb2.WatchRequest(path=CM, options=options, accept=core_pb2.ENCODING_JSON)
    stream = core_watch.watch(running.core.context, request, initial_page=page)
    try:
        got = [await within(anext(stream)) for _ in messages]
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    assert [sum(e.type == "ADDED" for e in r.events) for r in got] == messages
    names = [orjson.loads(e.object.data)["metadata"]["name"] for r in got for e in r.events if e.type == "ADDED"]
    wanted = [i for i in range(objects) if "labelSelector" not in options or i % 2 == 0]
    assert names == [f"c{i:02}" for i in wanted]
    if options.get("sendInitialEvents"):
        assert [e.type for e in got[-1].events] == ["BOOKMARK"]


async def test_initial_state_is_one_snapshot_across_pages(client: Client, running: RunningCore) -> None:
    """Writes between pages show as changes after the initial state, never inside it."""
    made = [await create(client, config_map(f"c{i}")) for i in range(4)]
    request = core_pb2.WatchRequest(path=CM, accept=core_pb2.ENCODING_JSON)
    stream = core_watch.watch(running.core.context, request, initial_page=2)
    events = Events(stream, lambda: None, start=False)
    first = await within(anext(stream))
    assert [orjson.loads(e.object.data)["metadata"]["name"] for e in first.events] == ["c0", "c1"]
    changed = await replace(client, made[3], data={"k": "later"})
    added = await create(client, config_map("c9"))
    await within(client.delete(cm_path("c2")))
    deleted_at = current(running)
    events.start()
    async with events:
        got = await events.take(5)
    assert summary(got) == [
        ("ADDED", "c2", rv(made[2])), ("ADDED", "c3", rv(made[3])),  # as the first page's revision saw them
        ("MODIFIED", "c3", rv(changed)), ("ADDED", "c9", rv(added)), ("DELETED", "c2", deleted_at)]
    assert got[1][1]["data"] == {"k": "v"}


# -- how a stream ends ---------------------------------------------------------------------------


@pytest.mark.parametrize("bookmarks", [False, True], ids=["plain", "with-bookmarks"])
async def test_timeout_seconds_ends_the_stream(client: Client, running: RunningCore, bookmarks: bool) -> None:
    a = await create(client, config_map("a"))
    started = time.monotonic()
    async with watch(client, CM, resourceVersion=str(rv(a)), timeoutSeconds=1, allowWatchBookmarks=bookmarks) as events:
        b = await create(client, config_map("b"))
        rest = await events.rest()  # ends cleanly, without an error
    elapsed = time.monotonic() - started
    assert summary([e for e in rest if e[0] != "BOOKMARK"]) == [("ADDED", "b", rv(b))]
    assert 0.9 <= elapsed < 3.0


QUEUE = 64  # events a watcher of `small_queues` may have unread; more than one group commit of WRITERS
WRITERS = 8


@pytest.fixture
async def small_queues(tmp_path: Path) -> AsyncIterator[RunningCore]:
    options = StoreOptions(sync=False, compact_interval=0, future_wait=0.5, watch_queue_size=QUEUE)
    store = await LmdbStore.open(tmp_path / "lmdb", options)
    running = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE)
    try:
        yield running
    finally:
        await running.stop()
        await store.close()


async def test_slow_watcher_is_dropped_and_costs_nobody(small_queues: RunningCore) -> None:
    running = small_queues
    writes, payload = 400, "x" * 16_384  # 6.5 MB: far past what gRPC flow control buffers for an unread stream
    start = current(running)
    target = f"127.0.0.1:{running.grpc_port}"
    async with grpc.aio.insecure_channel(target) as fast_channel, grpc.aio.insecure_channel(target) as slow_channel:
        fast_client = Client(core_pb2_grpc.CoreServiceStub(fast_channel), running)  # type: ignore[no-untyped-call]
        slow_client = Client(core_pb2_grpc.CoreServiceStub(slow_channel), running)  # type: ignore[no-untyped-call]
        slow = watch(slow_client, CM, resourceVersion=str(start), start=False)  # never read while writing
        async with slow, watch(fast_client, CM, resourceVersion=str(start)) as fast:
            await asyncio.sleep(0.2)  # both streams are open on the server

            async def write(i: int) -> None:
                await create(fast_client, config_map(f"c{i:03}", data={"k": payload}))

            started = time.monotonic()
            for first in range(0, writes, WRITERS):
                await within(asyncio.gather(*(write(i) for i in range(first, first + WRITERS))))
            write_seconds = time.monotonic() - started
            got = await fast.take(writes)
            assert [r for _, _, r in summary(got)] == list(range(start + 1, start + writes + 1))
            slow.start()
            late = await slow.rest()  # what the transport had buffered, then the end
    assert 0 < len(late) < writes
    assert summary(late) == summary(got)[: len(late)]  # no gap before the drop
    assert write_seconds < 10  # the writers never waited for the slow reader


async def test_many_watchers_see_the_same_stream(client: Client, running: RunningCore) -> None:
    start = current(running)
    streams = [watch(client, ALL_CM, resourceVersion=str(start)) for _ in range(50)]
    try:
        expected: list[tuple[str, str, int]] = []
        for i in range(20):
            obj = await create(client, config_map(f"c{i}"))
            expected.append(("ADDED", f"c{i}", rv(obj)))
            obj = await replace(client, obj, data={"k": "2"})
            expected.append(("MODIFIED", f"c{i}", rv(obj)))
            if i % 2:
                await within(client.delete(cm_path(f"c{i}")))
                expected.append(("DELETED", f"c{i}", current(running)))
        seen = await within(asyncio.gather(*(s.take(len(expected)) for s in streams)), 30)
        for got in seen:
            assert summary(got) == expected
    finally:
        await asyncio.gather(*(s.close() for s in streams))


# -- encodings -------------------------------------------------------------------------------------


async def test_protobuf_events_parse_as_config_maps(client: Client, running: RunningCore) -> None:
    start = current(running)
    async with watch(client, CM, accept=core_pb2.ENCODING_PROTOBUF, resourceVersion=str(start)) as events:
        obj = await create(client, config_map("a", labels={"app": "web"}, data={"k": "v"}))
        changed = await replace(client, obj, data={"k": "v2"})
        await within(client.delete(cm_path("a")))
        deleted_at = current(running)
        raw = [await events.raw() for _ in range(3)]
    assert [e.type for e in raw] == ["ADDED", "MODIFIED", "DELETED"]
    parsed = []
    for event in raw:
        assert event.object.encoding == core_pb2.ENCODING_PROTOBUF
        message = core_v1.ConfigMap.FromString(event.object.data)
        parsed.append(message)
        assert message.metadata.name == "a"
        assert message.metadata.namespace == "default"
        assert message.metadata.uid == obj["metadata"]["uid"]
        assert dict(message.metadata.labels) == {"app": "web"}
    assert [m.metadata.resourceVersion for m in parsed] == [str(rv(obj)), str(rv(changed)), str(deleted_at)]
    assert [dict(m.data) for m in parsed] == [{"k": "v"}, {"k": "v2"}, {"k": "v2"}]


async def test_protobuf_bookmark_and_error(client: Client, running: RunningCore) -> None:
    obj = await create(client, config_map("a"))
    async with watch_in_process(running, CM, bookmark_interval=0.05, accept=core_pb2.ENCODING_PROTOBUF,
                                resourceVersion=str(rv(obj)), allowWatchBookmarks=True) as events:
        event = await events.raw()
    assert event.type == "BOOKMARK"
    assert core_v1.ConfigMap.FromString(event.object.data) == core_v1.ConfigMap(
        metadata=meta_pb2.ObjectMeta(resourceVersion=str(rv(obj))))

    obj = await replace(client, obj, data={"k": "2"})
    await within(running.core.context.store.compact(rv(obj)))
    async with watch(client, CM, accept=core_pb2.ENCODING_PROTOBUF, resourceVersion="1") as events:
        event = await events.raw()
    assert event.type == "ERROR"
    status = meta_pb2.Status.FromString(event.object.data)
    assert (status.code, status.reason) == (410, "Expired")
    assert status.message == f"too old resource version: 1 ({rv(obj)})"


@pytest.mark.parametrize("replayed", [False, True], ids=["live", "replayed"])
async def test_large_objects_fit_the_default_message_limit(
    client: Client, running: RunningCore, replayed: bool
) -> None:
    """gRPC clients refuse messages over 4 MiB by default, so several near-1 MiB ConfigMaps (the
    size limit) must not share one WatchResponse: kube-apiserver sends each event as its own frame."""
    start = current(running)
    payload, count = "x" * 900_000, 16

    async def burst() -> None:
        await within(asyncio.gather(*(create(client, config_map(f"big{i}", data={"k": payload}))
                                      for i in range(count))), 30)

    if replayed:
        await burst()  # the watch below replays them from history
    async with watch(client, CM, resourceVersion=str(start), start=False) as events:
        if not replayed:
            await asyncio.sleep(0.1)  # the watch is open; its client reads only after the burst, as a busy one would
            await burst()
        events.start()
        got = await events.take(count)
    assert [r for _, _, r in summary(got)] == list(range(start + 1, start + count + 1))
    assert all(len(obj["data"]["k"]) == len(payload) for _, obj in got)


SHARED = [
    # the second watcher's options and encoding (the first's: none, JSON), whether it gets the first's messages
    ({}, core_pb2.ENCODING_JSON, True),
    ({"allowWatchBookmarks": True}, core_pb2.ENCODING_JSON, True),
    ({}, core_pb2.ENCODING_PROTOBUF, False),  # its own rendering, shared with the other protobuf watchers
    ({"labelSelector": "app=web"}, core_pb2.ENCODING_JSON, False),  # selected per watcher
]


@pytest.mark.parametrize(("options", "accept", "shared"), SHARED)
async def test_watchers_of_a_collection_share_each_events_message(
    client: Client, running: RunningCore, options: Obj, accept: core_pb2.Encoding, shared: bool
) -> None:
    """An event costs one message per encoding, not one per watcher: watchers that want every event of the
    collection in the same encoding get the same WatchResponse objects, even the one that reads later."""
    start = (await create(client, config_map("c0")))["metadata"]["resourceVersion"]
    streams = [core_watch.watch(running.core.context, core_pb2.WatchRequest(
        path=CM, options={"resourceVersion": start, **extra}, accept=encoding))
        for extra, encoding in (({}, core_pb2.ENCODING_JSON), (options, accept))]
    try:
        first, second = (asyncio.ensure_future(anext(stream)) for stream in streams)
        await asyncio.sleep(0.05)  # both watches are open before the writes
        for i in (1, 2):
            await create(client, config_map(f"c{i}", labels={"app": "web"}))
        got = [[await within(first), await within(anext(streams[0]))],
               [await within(second), await within(anext(streams[1]))]]  # the second reads once both are written
    finally:
        for stream in streams:
            await stream.aclose()  # type: ignore[attr-defined]
    assert [[(e.type, e.object.encoding) for r in mine for e in r.events] for mine in got] == [
        [("ADDED", core_pb2.ENCODING_JSON)] * 2, [("ADDED", accept)] * 2]
    assert [mine is theirs for mine, theirs in zip(got[0], got[1], strict=True)] == [shared, shared]


HUNG_CLIENT = """
import asyncio, os, signal, sys
import grpc
from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc

async def main() -> None:
    async with grpc.aio.insecure_channel(sys.argv[1]) as channel:
        call = core_pb2_grpc.CoreServiceStub(channel).Watch(core_pb2.WatchRequest(
            path=core_pb2.ResourcePath(version="v1", resource="configmaps", namespace="default"),
            options={"resourceVersion": sys.argv[2]}, accept=core_pb2.ENCODING_JSON))
        await asyncio.sleep(0.5)  # the call starts by itself (no message comes before an event)
        print("open", flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)  # hung: reads nothing from its socket, answers no ping

asyncio.run(main())
"""


async def test_a_hung_grpc_watcher_costs_writers_nothing_and_is_dropped(small_queues: RunningCore) -> None:
    """A gRPC client that stops reading altogether (its process stopped: unlike grpc-python's client, whose
    transport keeps reading a stream nobody reads into the client's memory) is held back by HTTP/2 flow
    control, so the server buffers a bounded amount for it (grpc's per-stream write buffer), its writers never
    wait, and its watch is dropped once it is QUEUE events behind: nothing is held for it past the log's bound.
    (Its connection goes when the keepalive ping goes unanswered, GrpcLimits.keepalive_time + _timeout.)"""
    running = small_queues
    broadcaster = running.core.context.store._broadcaster  # type: ignore[attr-defined]
    baseline = broadcaster.subscriber_count
    hung = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HUNG_CLIENT, f"127.0.0.1:{running.grpc_port}", str(current(running)),
        stdout=asyncio.subprocess.PIPE)
    try:
        assert hung.stdout is not None
        assert await asyncio.wait_for(hung.stdout.readline(), 30) == b"open\n"
        deadline = time.monotonic() + TIMEOUT
        while broadcaster.subscriber_count != baseline + 1:  # its watch is open on the server
            assert time.monotonic() < deadline, "the hung client's watch never opened"
            await asyncio.sleep(0.05)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
            client = Client(core_pb2_grpc.CoreServiceStub(channel), running)  # type: ignore[no-untyped-call]
            writes, payload = 400, "x" * 16_384  # 6.5 MB: far past flow control's window and grpc's buffer
            started = time.monotonic()
            for first in range(0, writes, WRITERS):
                await within(asyncio.gather(*(create(client, config_map(f"h{i:03}", data={"k": payload}))
                                              for i in range(first, first + WRITERS))))
            assert time.monotonic() - started < 10  # the writers never waited for the hung reader
        assert broadcaster.held_events <= QUEUE + WRITERS  # nothing held for it past the log's bound
        deadline = time.monotonic() + 15
        while broadcaster.subscriber_count != baseline:  # the unanswered ping ends its call
            assert time.monotonic() < deadline, "the hung watcher's call was never ended"
            await asyncio.sleep(0.1)
    finally:
        with contextlib.suppress(ProcessLookupError):
            hung.send_signal(signal.SIGCONT)
            hung.kill()
        await hung.wait()
