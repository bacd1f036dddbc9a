"""Informers against a real core over LMDB: the initial list, watch events in order, indexes, a relist after a
410 Expired (a compacted revision) delivered as the changes it makes, the resync, transforms, and one informer
shared by several users."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.objects.core import Core
from server.runtime.informer import Handlers, Informer, SharedInformers, Subscriptions, key_of
from server.runtime.reflector import CoreListWatch, WatchEvent

Obj = dict[str, Any]
CONFIGMAPS = core_pb2.ResourcePath(version="v1", resource="configmaps")


def _path(namespace: str, name: str = "") -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(version="v1", resource="configmaps", namespace=namespace, name=name)


def _raw(obj: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))


async def _create(core: Core, namespace: str, name: str, app: str = "") -> None:
    labels = {"app": app} if app else {}
    await core.create(core_pb2.CreateRequest(path=_path(namespace), object=_raw(
        {"metadata": {"name": name, "labels": labels}, "data": {"v": "0"}})))


async def _update(core: Core, namespace: str, name: str, app: str = "") -> None:
    got = orjson.loads((await core.get(core_pb2.GetRequest(path=_path(namespace, name)))).object.data)
    got["data"] = {"v": str(int(got["data"]["v"]) + 1)}
    got["metadata"]["labels"] = {"app": app} if app else {}
    await core.update(core_pb2.UpdateRequest(path=_path(namespace, name), object=_raw(got)))


async def _delete(core: Core, namespace: str, name: str) -> None:
    await core.delete(core_pb2.DeleteRequest(path=_path(namespace, name)))


class Recorder:
    """Handlers writing what they are called with: ("add", ns/name, initial), ("update", ns/name), ("delete",
    ns/name); ("resync", ns/name) for on_update(obj, obj)."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.handlers: Handlers[Obj] = Handlers(on_add=self._add, on_update=self._update, on_delete=self._delete)

    def _add(self, obj: Obj, initial: bool) -> None:
        self.events.append(("add", _name(obj), initial))

    def _update(self, old: Obj, new: Obj) -> None:
        self.events.append(("resync" if old is new else "update", _name(new)))

    def _delete(self, obj: Obj) -> None:
        self.events.append(("delete", _name(obj)))


def _name(obj: Obj) -> str:
    return "/".join(key_of(obj))


async def _until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


Step = tuple[str, str, str]  # (create/update/delete, namespace, name)


@pytest.mark.parametrize(("before", "after", "events"), [
    ([("create", "default", "a"), ("create", "kube-system", "b")], [],
     [("add", "default/a", True), ("add", "kube-system/b", True)]),
    ([], [("create", "default", "a"), ("update", "default", "a"), ("delete", "default", "a")],
     [("add", "default/a", False), ("update", "default/a"), ("delete", "default/a")]),
    ([("create", "default", "a")], [("update", "default", "a"), ("create", "default", "b"),
                                    ("delete", "default", "a")],
     [("add", "default/a", True), ("update", "default/a"), ("add", "default/b", False), ("delete", "default/a")]),
])
async def test_initial_list_then_watch_events(core: Core, before: list[Step], after: list[Step],
                                              events: list[tuple[Any, ...]]) -> None:
    async def run(steps: list[Step]) -> None:
        for verb, namespace, name in steps:
            await {"create": _create, "update": _update, "delete": _delete}[verb](core, namespace, name)

    await run(before)
    informer = Informer(core, CONFIGMAPS)
    recorder = Recorder()
    informer.add_handlers(recorder.handlers)
    await informer.start()
    try:
        assert recorder.events == events[:len(before)]  # the list is in before start returns
        await run(after)
        await _until(lambda: len(recorder.events) == len(events))
        assert recorder.events == events
        live = {(ns, name) for step, ns, name in (*before, *after) if step == "create"} - {
            (ns, name) for step, ns, name in after if step == "delete"}
        assert set(informer.cache) == live
    finally:
        await informer.stop()
    assert len(informer.cache) == 0  # a stopped informer lists afresh when started again


async def test_indexes_follow_changes(core: Core) -> None:
    informer = Informer(core, CONFIGMAPS, indexers={"app": lambda obj: [
        v for v in ((obj.get("metadata") or {}).get("labels") or {}).values()]})
    await _create(core, "default", "a", app="web")
    await informer.start()
    try:
        await _create(core, "default", "b", app="web")
        await _create(core, "kube-system", "c", app="db")
        await _until(lambda: len(informer.cache) == 3)

        def names(objs: list[Obj]) -> list[str]:
            return sorted(_name(o) for o in objs)

        assert names(informer.cache.by_index("app", "web")) == ["default/a", "default/b"]
        assert names(informer.cache.in_namespace("default")) == ["default/a", "default/b"]
        await _update(core, "default", "a", app="db")
        await _delete(core, "default", "b")
        await _until(lambda: len(informer.cache) == 2)
        await _until(lambda: not informer.cache.by_index("app", "web"))
        assert names(informer.cache.by_index("app", "db")) == ["default/a", "kube-system/c"]
        assert names(informer.cache.in_namespace("default")) == ["default/a"]
        assert informer.cache.by_index("app", "none") == []
    finally:
        await informer.stop()


class CompactedFirst(CoreListWatch):
    """The core's own list and watch, but the first watch asks for a revision compacted away (as a watch
    re-opened after a long disconnection does), after `meanwhile` changed the store."""

    def __init__(self, core: Core, meanwhile: Callable[[], Any]) -> None:
        super().__init__(core, CONFIGMAPS)
        self._core_ = core
        self._meanwhile = meanwhile
        self.watches: list[str] = []

    async def watch(self, revision: str) -> AsyncGenerator[tuple[list[WatchEvent], str], None]:
        if not self.watches:
            await self._meanwhile()
            store = self._core_.context.store
            await store.compact(store.current_revision())
            revision = "1"
        self.watches.append(revision)
        async for batch in super().watch(revision):
            yield batch


async def test_a_relist_after_410_is_delivered_as_its_changes(core: Core) -> None:
    await _create(core, "default", "kept")
    await _create(core, "default", "changed")
    await _create(core, "default", "deleted")

    async def meanwhile() -> None:
        await _update(core, "default", "changed")
        await _delete(core, "default", "deleted")
        await _create(core, "default", "new")

    source = CompactedFirst(core, meanwhile)
    informer = Informer(core, CONFIGMAPS, source=source)
    recorder = Recorder()
    informer.add_handlers(recorder.handlers)
    await informer.start()
    try:
        await _until(lambda: len(source.watches) >= 2)  # listed again, then watching from the new list
        assert recorder.events[:3] == [("add", "default/changed", True), ("add", "default/deleted", True),
                                       ("add", "default/kept", True)]
        assert recorder.events[3:] == [("delete", "default/deleted"), ("update", "default/changed"),
                                       ("update", "default/kept"), ("add", "default/new", False)]
        assert sorted(k[1] for k in informer.cache) == ["changed", "kept", "new"]
        assert informer.cache.get(("default", "changed"))["data"] == {"v": "1"}  # type: ignore[index]
        await _create(core, "default", "after")  # and the new watch goes on
        await _until(lambda: ("add", "default/after", False) in recorder.events)
    finally:
        await informer.stop()


async def test_resync_hands_every_cached_object_to_on_update(core: Core) -> None:
    await _create(core, "default", "a")
    await _create(core, "default", "b")
    informer = Informer(core, CONFIGMAPS, resync=0.05)
    recorder = Recorder()
    informer.add_handlers(recorder.handlers)
    await informer.start()
    try:
        await _until(lambda: recorder.events.count(("resync", "default/a")) >= 2)
        assert ("resync", "default/b") in recorder.events
    finally:
        await informer.stop()


async def test_a_transform_is_what_the_cache_holds(core: Core) -> None:
    await _create(core, "default", "a")
    informer = Informer(core, CONFIGMAPS, transform=lambda obj: str(obj["metadata"]["uid"]))
    await informer.start()
    try:
        uid = informer.cache.get(("default", "a"))
        got = orjson.loads((await core.get(core_pb2.GetRequest(path=_path("default", "a")))).object.data)
        assert uid == got["metadata"]["uid"]
    finally:
        await informer.stop()


async def test_one_informer_shared_by_its_users(core: Core) -> None:
    await _create(core, "default", "a")
    informers = SharedInformers(core)
    first, second = informers.informer(CONFIGMAPS), informers.informer(_path(""))
    assert first is second and informers.informer(_path("default")) is not first
    early, late = Recorder(), Recorder()
    first.add_handlers(early.handlers)
    await first.start()
    await _create(core, "default", "b")
    await _until(lambda: len(first.cache) == 2)
    second.add_handlers(late.handlers)  # a user that comes later gets what the cache holds
    await second.start()
    assert late.events == [("add", "default/a", True), ("add", "default/b", True)]
    first.remove_handlers(early.handlers)
    await first.stop()  # one user left: still running
    await _create(core, "default", "c")
    await _until(lambda: ("add", "default/c", False) in late.events)
    assert ("add", "default/c", False) not in early.events and second.running()
    await second.stop()
    assert not second.running() and len(second.cache) == 0


async def test_a_user_stopped_before_it_started_leaves_the_others_running(core: Core) -> None:
    """A singleton whose leadership began with a failure is stopped without having started: the informers it
    shares keep running for the others."""
    informers = SharedInformers(core)
    running, never = Subscriptions(), Subscriptions()
    shared = running.add(informers.informer(CONFIGMAPS), Recorder().handlers)
    never.add(informers.informer(CONFIGMAPS), Recorder().handlers)
    await running.start()
    await never.stop()
    assert shared.running() and running.running() and not never.running()
    await running.start()  # started twice: once
    await running.stop()
    assert not shared.running()
