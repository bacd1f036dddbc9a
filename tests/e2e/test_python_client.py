"""The official Python client (`kubernetes`) against Capstan: typed CoreV1Api, watch, and the dynamic client.

Most tests share the session's `capstan serve`; the compaction test runs its own server
in this process (store, core and gateway on a background event loop) because compacting
history is a store call, with no endpoint. Every request carries a timeout.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from aiohttp import web
from kubernetes import client, watch
from kubernetes.client import (
    ApiException,
    V1ConfigMap,
    V1Container,
    V1ListMeta,
    V1Namespace,
    V1ObjectMeta,
    V1Pod,
    V1PodSpec,
    V1Secret,
    V1Service,
    V1ServicePort,
    V1ServiceSpec,
)
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError

from capstan.cli.inprocess import InProcessClient
from gateway.app import build_app, start_http
from server.auth.config import INSECURE
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests.e2e.conftest import Obj, bounded, dns_label

RFC1123 = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
           "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
           "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"

T = TypeVar("T")


def meta(obj: Any) -> V1ObjectMeta:
    got = obj.metadata
    assert isinstance(got, V1ObjectMeta), obj
    return got


def list_meta(obj: Any) -> V1ListMeta:
    got = obj.metadata
    assert isinstance(got, V1ListMeta), obj
    return got


def rv(obj: Any) -> int:
    return int(obj.metadata.resource_version or "0")


def names(items: Any) -> list[str | None]:
    return [meta(item).name for item in items]


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def new_watch() -> Any:
    return watch.Watch()  # type: ignore[no-untyped-call]


# -- CRUD, table-driven over the kinds ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """One kind as the typed client sees it: its method suffix, a fresh body, and a change to replace it with."""

    suffix: str  # CoreV1Api's <verb>_namespaced_<suffix> or <verb>_<suffix>
    namespaced: bool
    new: Callable[[str, dict[str, str]], Any]
    created: Callable[[Any], object]  # true of the object as first stored
    change: Callable[[Any], None]
    changed: Callable[[Any], object]  # true of it after the replace


def _new_configmap(name: str, labels: dict[str, str]) -> V1ConfigMap:
    return V1ConfigMap(metadata=V1ObjectMeta(name=name, labels=labels), data={"k": "v1"},
                       binary_data={"b": base64.b64encode(b"\x00\xff").decode()})  # the client does not encode bytes


def _change_configmap(cm: Any) -> None:
    cm.data = {"k": "v2", "new": "x"}


def _new_secret(name: str, labels: dict[str, str]) -> V1Secret:
    return V1Secret(metadata=V1ObjectMeta(name=name, labels=labels), string_data={"pw": "hunter2"})


def _change_secret(secret: Any) -> None:
    secret.data = {**secret.data, "more": b64("x")}


def _change_namespace(ns: Any) -> None:
    meta(ns).labels = {**(meta(ns).labels or {}), "changed": "yes"}


KINDS = [
    Kind("config_map", True, _new_configmap,
         lambda o: (o.data, o.binary_data) == ({"k": "v1"}, {"b": base64.b64encode(b"\x00\xff").decode()}),
         _change_configmap, lambda o: o.data == {"k": "v2", "new": "x"}),
    Kind("secret", True, _new_secret,
         lambda o: (o.type, o.data, o.string_data) == ("Opaque", {"pw": b64("hunter2")}, None),
         _change_secret, lambda o: o.data == {"pw": b64("hunter2"), "more": b64("x")}),
    Kind("namespace", False, lambda name, labels: V1Namespace(metadata=V1ObjectMeta(name=name, labels=labels)),
         lambda o: (o.status.phase, o.spec.finalizers) == ("Active", ["kubernetes"]),
         _change_namespace, lambda o: (meta(o).labels or {}).get("changed") == "yes"),
]


class Verbs:
    """CoreV1Api's methods for one kind, namespaced or not, behind one call shape."""

    def __init__(self, core: client.CoreV1Api, kind: Kind, namespace: str) -> None:
        self._core, self._kind, self._ns = core, kind, namespace

    def _call(self, verb: str, *args: Any, **kwargs: Any) -> Any:
        if self._kind.namespaced:
            return getattr(self._core, f"{verb}_namespaced_{self._kind.suffix}")(*args[:1], self._ns, *args[1:],
                                                                                  **kwargs)
        return getattr(self._core, f"{verb}_{self._kind.suffix}")(*args, **kwargs)

    def create(self, body: Any) -> Any:
        if self._kind.namespaced:
            return getattr(self._core, f"create_namespaced_{self._kind.suffix}")(self._ns, body)
        return getattr(self._core, f"create_{self._kind.suffix}")(body)

    def read(self, name: str) -> Any:
        return self._call("read", name)

    def replace(self, name: str, body: Any) -> Any:
        return self._call("replace", name, body)

    def delete(self, name: str) -> Any:
        return self._call("delete", name)

    def list(self, **options: Any) -> Any:
        if self._kind.namespaced:
            return getattr(self._core, f"list_namespaced_{self._kind.suffix}")(self._ns, **options)
        return getattr(self._core, f"list_{self._kind.suffix}")(**options)


@pytest.mark.parametrize("kind", KINDS, ids=[k.suffix for k in KINDS])
def test_crud(core: client.CoreV1Api, namespace: str, kind: Kind) -> None:
    verbs = Verbs(core, kind, namespace)
    name = dns_label(f"crud-{namespace}") if not kind.namespaced else "obj"
    labels = {"crud": namespace}

    created = verbs.create(kind.new(name, labels))
    assert (meta(created).name, meta(created).labels) == (name, {**labels, **(
        {} if kind.namespaced else {"kubernetes.io/metadata.name": name})})
    assert meta(created).uid and rv(created) > 0 and meta(created).creation_timestamp is not None
    assert kind.created(created), created

    read = verbs.read(name)
    assert (meta(read).uid, rv(read)) == (meta(created).uid, rv(created))
    assert kind.created(read), read

    kind.change(read)
    replaced = verbs.replace(name, read)
    assert rv(replaced) > rv(created) and meta(replaced).uid == meta(created).uid
    assert kind.changed(replaced) and kind.changed(verbs.read(name)), replaced

    listed = verbs.list(label_selector=f"crud={namespace}")
    assert names(listed.items) == [name]
    assert rv(listed) >= rv(replaced)
    assert verbs.list(label_selector=f"crud={namespace},other=x").items == []

    deleted = verbs.delete(name)
    if kind.namespaced:  # kube-apiserver's registry answers a Status naming the resource (not the kind) and uid
        assert deleted == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                           "details": {"name": name, "kind": f"{kind.suffix.replace('_', '')}s",
                                       "uid": meta(created).uid}}
    else:  # a namespace with the kubernetes finalizer is only marked: the object comes back, Terminating
        assert (deleted["kind"], deleted["status"]["phase"]) == ("Namespace", "Terminating")
        assert deleted["metadata"]["deletionTimestamp"]
    deadline = time.monotonic() + 10  # the namespace controller finalizes a namespace after its contents
    while True:
        try:
            verbs.read(name)
        except ApiException as gone:
            assert gone.status == 404
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"{name} still there 10s after delete")
        time.sleep(0.05)


# -- typed deletes -----------------------------------------------------------------------------------------------------


def test_deleting_a_pod_a_service_and_a_namespace_answers_the_deleted_object(core: client.CoreV1Api,
                                                                             namespace: str) -> None:
    # Their registry stores set ReturnDeletedObject, so the client parses the answer as the kind (V1Pod, V1Service);
    # delete_namespace is typed `object`: the namespace, marked Terminating.
    pod = core.create_namespaced_pod(namespace, V1Pod(
        metadata=V1ObjectMeta(name="web"), spec=V1PodSpec(containers=[V1Container(name="app", image="nginx:1.27")])))
    deleted_pod = core.delete_namespaced_pod("web", namespace)
    assert isinstance(deleted_pod, V1Pod), deleted_pod
    assert (deleted_pod.kind, meta(deleted_pod).name, meta(deleted_pod).uid) == ("Pod", "web", meta(pod).uid)
    assert rv(deleted_pod) > rv(pod)  # the deletion's revision

    service = core.create_namespaced_service(namespace, V1Service(
        metadata=V1ObjectMeta(name="web"), spec=V1ServiceSpec(ports=[V1ServicePort(port=80)])))
    deleted_service = core.delete_namespaced_service("web", namespace)
    assert isinstance(deleted_service, V1Service), deleted_service
    assert (deleted_service.kind, meta(deleted_service).uid) == ("Service", meta(service).uid)
    assert deleted_service.spec is not None and service.spec is not None
    assert deleted_service.spec.cluster_ip == service.spec.cluster_ip
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_service("web", namespace)
    assert gone.value.status == 404

    name = dns_label(f"gone-{namespace}")
    created = core.create_namespace(V1Namespace(metadata=V1ObjectMeta(name=name)))
    deleted_ns = core.delete_namespace(name)
    assert isinstance(deleted_ns, dict), deleted_ns
    assert (deleted_ns["kind"], deleted_ns["metadata"]["uid"]) == ("Namespace", meta(created).uid)
    assert deleted_ns["status"]["phase"] == "Terminating"


# -- paging ------------------------------------------------------------------------------------------------------------


@pytest.fixture
def pages_ns(core: client.CoreV1Api, namespace: str) -> str:
    for name in ("a0", "a1", "a2", "a3", "a4"):
        core.create_namespaced_config_map(namespace, V1ConfigMap(metadata=V1ObjectMeta(name=name,
                                                                                       labels={"page": "yes"})))
    core.create_namespaced_config_map(namespace, V1ConfigMap(metadata=V1ObjectMeta(name="zz")))
    return namespace


# (label selector, limit, the pages' names, each page's remainingItemCount). kube-apiserver counts the
# remaining items only for an unfiltered list.
PAGES: list[tuple[str | None, int, list[list[str]], list[int | None]]] = [
    (None, 2, [["a0", "a1"], ["a2", "a3"], ["a4", "zz"]], [4, 2, None]),
    (None, 4, [["a0", "a1", "a2", "a3"], ["a4", "zz"]], [2, None]),
    (None, 6, [["a0", "a1", "a2", "a3", "a4", "zz"]], [None]),
    ("page=yes", 2, [["a0", "a1"], ["a2", "a3"], ["a4"]], [None, None, None]),
    ("page!=yes", 1, [["zz"]], [None]),
]


@pytest.mark.parametrize(("selector", "limit", "pages", "remaining"), PAGES,
                         ids=[f"{s or 'all'}-limit{n}" for s, n, *_ in PAGES])
def test_list_pages_with_limit_and_continue(core: client.CoreV1Api, pages_ns: str, selector: str | None, limit: int,
                                            pages: list[list[str]], remaining: list[int | None]) -> None:
    got, counts, versions = [], [], set()
    token = None
    while True:
        page = core.list_namespaced_config_map(pages_ns, label_selector=selector, limit=limit, _continue=token)
        got.append(names(page.items))
        counts.append(list_meta(page).remaining_item_count)
        versions.add(list_meta(page).resource_version)
        token = list_meta(page).var_continue
        if not token:
            break
        # Writes between pages are not seen: every page comes from the first page's snapshot.
        core.create_namespaced_config_map(pages_ns, V1ConfigMap(metadata=V1ObjectMeta(
            name=f"a{len(got)}x", labels={"page": "yes"})))
    assert (got, counts) == (pages, remaining)
    assert len(versions) == 1


# -- errors ------------------------------------------------------------------------------------------------------------


def _status(code: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    status: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
                   "reason": reason}
    if details is not None:
        status["details"] = details
    status["code"] = code
    return status


def _stale_replace(core: client.CoreV1Api, ns: str) -> Any:
    old = core.read_namespaced_config_map("dup", ns)
    core.replace_namespaced_config_map("dup", ns, V1ConfigMap(metadata=old.metadata, data={"k": "changed"}))
    return core.replace_namespaced_config_map("dup", ns, old)  # old's resourceVersion is no longer current


def _immutable_change(core: client.CoreV1Api, ns: str) -> Any:
    core.create_namespaced_config_map(ns, V1ConfigMap(metadata=V1ObjectMeta(name="imm"), immutable=True,
                                                      data={"a": "b"}))
    return core.replace_namespaced_config_map("imm", ns, V1ConfigMap(metadata=V1ObjectMeta(name="imm"),
                                                                     immutable=True, data={"a": "c"}))


# (what, the call, the Status kube-apiserver answers); "dup" exists in the namespace.
ERRORS: list[tuple[str, Callable[[client.CoreV1Api, str], Any], Obj]] = [
    ("read missing", lambda c, ns: c.read_namespaced_config_map("nope", ns),
     _status(404, "NotFound", 'configmaps "nope" not found', {"name": "nope", "kind": "configmaps"})),
    ("delete missing", lambda c, ns: c.delete_namespaced_secret("nope", ns),
     _status(404, "NotFound", 'secrets "nope" not found', {"name": "nope", "kind": "secrets"})),
    ("read missing namespace", lambda c, ns: c.read_namespace("nope-ns"),
     _status(404, "NotFound", 'namespaces "nope-ns" not found', {"name": "nope-ns", "kind": "namespaces"})),
    ("create duplicate", lambda c, ns: c.create_namespaced_config_map(ns, V1ConfigMap(
        metadata=V1ObjectMeta(name="dup"))),
     _status(409, "AlreadyExists", 'configmaps "dup" already exists', {"name": "dup", "kind": "configmaps"})),
    ("create in missing namespace", lambda c, ns: c.create_namespaced_config_map("nope-ns", V1ConfigMap(
        metadata=V1ObjectMeta(name="x"))),
     _status(404, "NotFound", 'namespaces "nope-ns" not found', {"name": "nope-ns", "kind": "namespaces"})),
    ("replace stale", _stale_replace,
     _status(409, "Conflict", f'Operation cannot be fulfilled on configmaps "dup": {MODIFIED}',
             {"name": "dup", "kind": "configmaps"})),
    ("replace other name", lambda c, ns: c.replace_namespaced_config_map("dup", ns, V1ConfigMap(
        metadata=V1ObjectMeta(name="other"))),
     _status(400, "BadRequest", "the name of the object (other) does not match the name on the URL (dup)")),
    ("invalid name", lambda c, ns: c.create_namespaced_config_map(ns, V1ConfigMap(
        metadata=V1ObjectMeta(name="Bad_Name"))),
     _status(422, "Invalid", f'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": {RFC1123}',
             {"name": "Bad_Name", "kind": "ConfigMap", "causes": [{
                 "reason": "FieldValueInvalid", "message": f'Invalid value: "Bad_Name": {RFC1123}',
                 "field": "metadata.name"}]})),
    ("immutable", _immutable_change,
     _status(422, "Invalid", 'ConfigMap "imm" is invalid: data: Forbidden: field is immutable when `immutable` is set',
             {"name": "imm", "kind": "ConfigMap", "causes": [{
                 "reason": "FieldValueForbidden", "message": "Forbidden: field is immutable when `immutable` is set",
                 "field": "data"}]})),
    ("bad label selector", lambda c, ns: c.list_namespaced_config_map(ns, label_selector="a in (b"),
     _status(400, "BadRequest", "unable to parse requirement: found '', expected: ',' or ')'")),
]


@pytest.mark.parametrize(("call", "status"), [(c, s) for _, c, s in ERRORS], ids=[w for w, _, _ in ERRORS])
def test_errors_raise_api_exception_with_the_status(core: client.CoreV1Api, namespace: str,
                                                    call: Callable[[client.CoreV1Api, str], Any],
                                                    status: Obj) -> None:
    core.create_namespaced_config_map(namespace, V1ConfigMap(metadata=V1ObjectMeta(name="dup")))
    with pytest.raises(ApiException) as raised:
        call(core, namespace)
    err = raised.value
    assert err.status == status["code"]
    assert err.headers is not None and err.headers["Content-Type"] == "application/json"
    assert json.loads(err.body or "") == status


# -- watch -------------------------------------------------------------------------------------------------------------


def _later(*steps: Callable[[], object], delay: float = 0.3) -> threading.Thread:
    """Run `steps` on a thread after `delay`, while the test reads its watch."""

    def run() -> None:
        time.sleep(delay)
        for step in steps:
            step()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _events(stream: Iterator[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    got = []
    for event in stream:
        got.append(event)
        if len(got) == count:
            break
    return got


def test_watch_streams_added_modified_deleted(core: client.CoreV1Api, namespace: str) -> None:
    start = list_meta(core.list_namespaced_config_map(namespace)).resource_version

    def modify() -> None:
        cm = core.read_namespaced_config_map("w", namespace)
        cm.data = {"k": "v2"}
        core.replace_namespaced_config_map("w", namespace, cm)

    writer = _later(
        lambda: core.create_namespaced_config_map(namespace, V1ConfigMap(metadata=V1ObjectMeta(name="w"),
                                                                         data={"k": "v1"})),
        modify,
        lambda: core.delete_namespaced_config_map("w", namespace),
    )
    w = new_watch()
    got = _events(w.stream(core.list_namespaced_config_map, namespace, resource_version=start, timeout_seconds=10),
                  3)
    w.stop()
    writer.join(5)
    assert [(e["type"], meta(e["object"]).name, e["object"].data) for e in got] == [
        ("ADDED", "w", {"k": "v1"}), ("MODIFIED", "w", {"k": "v2"}), ("DELETED", "w", {"k": "v2"})]
    assert all(isinstance(e["object"], V1ConfigMap) for e in got)
    versions = [rv(e["object"]) for e in got]
    assert versions == sorted(set(versions)) and versions[0] > int(start or "0")
    assert w.resource_version == str(versions[-1])  # where the client would resume


def test_watch_with_a_label_selector_sees_objects_enter_and_leave_it(core: client.CoreV1Api, namespace: str) -> None:
    """kube-apiserver's watch cache turns an update that leaves the selection into DELETED (of the object as it
    was, at the update's resourceVersion) and one that enters it into ADDED (cacheWatcher.convertToWatchEvent)."""
    start = list_meta(core.list_namespaced_config_map(namespace)).resource_version

    def update(app: str, data: str = "") -> Callable[[], object]:
        def step() -> object:
            cm = core.read_namespaced_config_map("x", namespace)
            meta(cm).labels = {"app": app}
            cm.data = {"d": data} if data else None
            return core.replace_namespaced_config_map("x", namespace, cm)
        return step

    written: list[Any] = []
    _later(
        lambda: written.append(core.create_namespaced_config_map(namespace, V1ConfigMap(metadata=V1ObjectMeta(
            name="x", labels={"app": "a"})))),
        lambda: written.append(update("b")()),  # leaves the selection
        update("b2"),  # outside it: nothing
        update("a"),  # enters it again
        update("a", data="1"),  # changes inside it
        lambda: core.create_namespaced_config_map(namespace, V1ConfigMap(metadata=V1ObjectMeta(
            name="unrelated", labels={"app": "b"}))),
        lambda: core.delete_namespaced_config_map("x", namespace),
        delay=0,
    ).join(10)
    w = new_watch()
    got = _events(w.stream(core.list_namespaced_config_map, namespace, label_selector="app=a",
                           resource_version=start, timeout_seconds=3), 5)
    w.stop()
    assert [(e["type"], meta(e["object"]).labels, e["object"].data) for e in got] == [
        ("ADDED", {"app": "a"}, None), ("DELETED", {"app": "a"}, None), ("ADDED", {"app": "a"}, None),
        ("MODIFIED", {"app": "a"}, {"d": "1"}), ("DELETED", {"app": "a"}, {"d": "1"})]
    assert rv(got[1]["object"]) == rv(written[1])


def test_watch_one_object_by_field_selector(core: client.CoreV1Api, namespace: str) -> None:
    start = list_meta(core.list_namespaced_config_map(namespace)).resource_version
    for name in ("other", "mine", "another"):
        core.create_namespaced_config_map(namespace, V1ConfigMap(metadata=V1ObjectMeta(name=name)))
    w = new_watch()
    got = _events(w.stream(core.list_namespaced_config_map, namespace, field_selector="metadata.name=mine",
                           resource_version=start, timeout_seconds=2), 1)
    w.stop()
    assert [(e["type"], meta(e["object"]).name) for e in got] == [("ADDED", "mine")]


def test_watch_ends_at_timeout_seconds(core: client.CoreV1Api, namespace: str) -> None:
    started = time.monotonic()
    assert list(new_watch().stream(core.list_namespaced_config_map, namespace, timeout_seconds=1)) == []
    assert time.monotonic() - started < 5


def test_watch_answers_200_before_any_event(core: client.CoreV1Api, namespace: str) -> None:
    """kube-apiserver writes the 200 and flushes it as a watch starts (WatchServer.HandleHTTP "begin the stream"):
    a client's Watch() returns at once, events or not. client-go's informers rely on it to stop."""
    started = time.monotonic()
    resp: Any = core.list_namespaced_config_map(namespace, watch=True, timeout_seconds=30, _preload_content=False,
                                           _request_timeout=(5, 5))
    try:
        assert (resp.status, resp.headers["Content-Type"]) == (200, "application/json")
        assert time.monotonic() - started < 10  # at once, not after the watch's 30 s, on a loaded machine too
    finally:
        resp.close()


# -- resuming a watch after compaction: 410 Gone -----------------------------------------------------------------------


@dataclass
class InProcess:
    """Store, core and gateway on an event loop of their own thread, so the test can compact the store."""

    loop: asyncio.AbstractEventLoop
    store: LmdbStore
    running: RunningCore
    runner: web.AppRunner
    url: str

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 15.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)


@pytest.fixture
def inprocess(tmp_path: Path) -> Iterator[InProcess]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="capstan-inprocess", daemon=True)
    thread.start()

    async def up() -> InProcess:
        store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
        running = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE)
        runner, port = await start_http(build_app(InProcessClient(running.guard)), "127.0.0.1", 0)
        return InProcess(loop, store, running, runner, f"http://127.0.0.1:{port}")

    async def down(served: InProcess) -> None:
        await served.runner.cleanup()
        await served.running.stop()
        await served.store.close()

    try:
        served = asyncio.run_coroutine_threadsafe(up(), loop).result(30)
        try:
            yield served
        finally:
            served.run(down(served), timeout=30)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def test_watch_resumed_after_compaction_gets_410_then_relists(inprocess: InProcess) -> None:
    api_client = bounded(client.ApiClient(client.Configuration(host=inprocess.url)))
    core = client.CoreV1Api(api_client)
    ns = "default"

    def create(name: str) -> Any:
        return core.create_namespaced_config_map(ns, V1ConfigMap(metadata=V1ObjectMeta(name=name)))

    # A client lists, watches, sees c0, and remembers where it was.
    start = list_meta(core.list_namespaced_config_map(ns)).resource_version
    create("c0")
    w = new_watch()
    assert [meta(e["object"]).name for e in _events(
        w.stream(core.list_namespaced_config_map, ns, resource_version=start, timeout_seconds=2), 1)] == ["c0"]
    w.stop()
    resume_from = w.resource_version
    # While it is away, more writes (and a paged list, half read), and the history it would resume from is compacted.
    create("c1")
    first_page = core.list_namespaced_config_map(ns, limit=1)
    create("c2")
    compacted = inprocess.run(inprocess.store.compact(inprocess.store.current_revision()))
    assert compacted > int(resume_from)

    # On the wire: 200, then one ERROR event carrying a 410 Expired Status (the cacher's errWatcher).
    resp: Any = core.list_namespaced_config_map(ns, watch=True, resource_version=resume_from, timeout_seconds=2,
                                           _preload_content=False)
    assert resp.status == 200
    (event,) = [json.loads(line) for line in resp.data.decode().splitlines()]
    assert event["type"] == "ERROR"
    assert {k: v for k, v in event["object"].items() if k != "message"} == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Expired", "code": 410}
    assert event["object"]["message"].startswith(f"too old resource version: {resume_from} (")

    # The client turns it into ApiException(410) ...
    with pytest.raises(ApiException) as expired:
        list(new_watch().stream(core.list_namespaced_config_map, ns, resource_version=resume_from, timeout_seconds=2))
    assert expired.value.status == 410
    assert str(expired.value.reason).startswith("Expired: too old resource version")
    # ... also without timeout_seconds, after its one retry from the same resourceVersion.
    with pytest.raises(ApiException) as expired:
        list(new_watch().stream(core.list_namespaced_config_map, ns, resource_version=resume_from))
    assert expired.value.status == 410

    # A continue token from before the compaction is expired too; the Status carries one to go on inconsistently.
    token = list_meta(first_page).var_continue
    with pytest.raises(ApiException) as expired:
        core.list_namespaced_config_map(ns, limit=1, _continue=token)
    status = json.loads(expired.value.body or "")
    assert (status["code"], status["reason"]) == (410, "Expired")
    assert status["message"].startswith("The provided continue parameter is too old to display a consistent list")
    rest = core.list_namespaced_config_map(ns, _continue=status["metadata"]["continue"])
    assert names(rest.items) == ["c1", "c2"]

    # So it lists again and resumes from there.
    relisted = core.list_namespaced_config_map(ns)
    assert names(relisted.items) == ["c0", "c1", "c2"]
    create("c3")
    w = new_watch()
    got = _events(w.stream(core.list_namespaced_config_map, ns, resource_version=list_meta(relisted).resource_version,
                           timeout_seconds=2), 1)
    w.stop()
    assert [(e["type"], meta(e["object"]).name) for e in got] == [("ADDED", "c3")]
    api_client.close()  # type: ignore[no-untyped-call]


# -- the dynamic client ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dynamic(api: client.ApiClient, tmp_path_factory: pytest.TempPathFactory) -> Any:
    cache = tmp_path_factory.mktemp("dynamic") / "discovery.json"
    return DynamicClient(api, cache_file=str(cache))  # type: ignore[no-untyped-call]


# (kind, resource, namespaced, a body's other fields, what reads back)
DYNAMIC: list[tuple[str, str, bool, Obj, Callable[[Any], object]]] = [
    ("ConfigMap", "configmaps", True, {"data": {"k": "v"}}, lambda o: o.data.k == "v"),
    ("Secret", "secrets", True, {"stringData": {"k": "v"}}, lambda o: o.data.k == b64("v")),
    ("Namespace", "namespaces", False, {}, lambda o: o.status.phase == "Active"),
]


@pytest.mark.parametrize(("kind", "resource", "namespaced", "fields", "check"), DYNAMIC, ids=[k for k, *_ in DYNAMIC])
def test_dynamic_client(dynamic: Any, namespace: str, kind: str, resource: str, namespaced: bool, fields: Obj,
                        check: Callable[[Any], object]) -> None:
    api = dynamic.resources.get(api_version="v1", kind=kind)
    assert (api.name, api.namespaced, api.group_version) == (resource, namespaced, "v1")
    name = "dyn" if namespaced else dns_label(f"dyn-{namespace}")
    where = {"namespace": namespace} if namespaced else {}
    body = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "labels": {"dyn": "yes"}}, **fields}

    created = api.create(body=body, **where)
    assert (created.kind, created.metadata.name) == (kind, name)
    got = api.get(name=name, **where)
    assert check(got) and got.metadata.uid == created.metadata.uid
    listed = api.get(label_selector="dyn=yes", **where)
    assert listed.kind == f"{kind}List"
    assert name in [item.metadata.name for item in listed.items]
    deleted = api.delete(name=name, **where)
    assert deleted.kind == ("Namespace" if kind == "Namespace" else "Status")
    if namespaced:
        with pytest.raises(NotFoundError) as missing:
            api.get(name=name, **where)
        assert missing.value.status == 404
