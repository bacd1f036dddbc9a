"""Namespaces: the defaults, NamespaceLifecycle admission, and deletion emptying a namespace before it goes.

Deletion is asynchronous (the namespace controller empties a terminating namespace),
so those tests poll with a deadline rather than sleep.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests.server import kube
from tests.server.client import Client, Failed, Obj, path, refused

NAMESPACES = path("namespaces")
DEFAULTS = ["default", "kube-node-lease", "kube-public", "kube-system"]
HOLD = "example.com/hold"
DEADLINE = 10.0


def ns_path(name: str) -> core_pb2.ResourcePath:
    return path("namespaces", name=name)


async def eventually(check: Callable[[], Awaitable[bool]], what: str, timeout: float = DEADLINE) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.05)


async def gone(client: Client, p: core_pb2.ResourcePath) -> bool:
    try:
        await client.get(p)
    except Failed as failed:
        assert failed.status["code"] == 404, failed.status
        return True
    return False


def assert_active_namespace(ns: Obj, name: str) -> None:
    assert ns["metadata"]["name"] == name
    assert ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == name
    assert "kubernetes" in ns["spec"]["finalizers"]
    assert ns["status"] == {"phase": "Active"}
    assert "deletionTimestamp" not in ns["metadata"]


# ---------------------------------------------------------------- defaults


async def test_the_default_namespaces_exist_from_first_start(client: Client) -> None:
    _, items = await client.list(NAMESPACES)
    assert [i["metadata"]["name"] for i in items] == DEFAULTS
    for ns in items:
        assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": ns["metadata"]["name"]}
        assert ns["spec"] == {"finalizers": ["kubernetes"]}
        assert ns["status"] == {"phase": "Active"}


async def test_a_restart_keeps_the_default_namespaces_as_they_are(tmp_path: Path) -> None:
    seen: list[dict[str, str]] = []
    revisions: list[int] = []
    for _ in range(2):
        store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
        running = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
                client = Client(core_pb2_grpc.CoreServiceStub(channel), running)  # type: ignore[no-untyped-call]
                _, items = await client.list(NAMESPACES)
                seen.append({i["metadata"]["name"]: i["metadata"]["uid"] for i in items})
                revisions.append(client.revision())
        finally:
            await running.stop()
            await store.close()
    assert list(seen[0]) == DEFAULTS
    assert seen[0] == seen[1]
    assert revisions[0] == revisions[1]


async def test_a_new_namespace_gets_the_name_label_the_kubernetes_finalizer_and_phase_active(client: Client) -> None:
    # SetDefaults_Namespace sets the label; namespaceStrategy.PrepareForCreate appends the finalizer.
    created = await client.create(
        NAMESPACES,
        {
            "metadata": {"name": "team", "labels": {"kubernetes.io/metadata.name": "wrong", "x": "y"}},
            "spec": {"finalizers": ["example.com/first"]},
        },
    )
    assert created["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team", "x": "y"}
    assert created["spec"] == {"finalizers": ["example.com/first", "kubernetes"]}
    assert created["status"] == {"phase": "Active"}
    assert await client.get(ns_path("team")) == created


# ---------------------------------------------------------------- NamespaceLifecycle admission


MISSING_NAMESPACE_CASES: list[tuple[str, str, Obj]] = [
    ("configmaps", "config map", {"metadata": {"name": "a"}}),
    ("secrets", "secret", {"metadata": {"name": "a"}}),
    ("configmaps", "generated name", {"metadata": {"generateName": "gen-"}}),
    # Admission runs before the strategy's validation, so a bad name still meets the missing namespace first.
    ("configmaps", "invalid name", {"metadata": {"name": "Not_Valid"}}),
]


@pytest.mark.parametrize(
    ("resource", "body"),
    [(r, b) for r, _, b in MISSING_NAMESPACE_CASES],
    ids=[i for _, i, _ in MISSING_NAMESPACE_CASES],
)
async def test_creating_in_a_missing_namespace_is_not_found_naming_the_namespace(
    client: Client, resource: str, body: Obj
) -> None:
    # NamespaceLifecycle.Admit answers the live lookup's NotFound for the namespace.
    before = client.revision()
    failed = await refused(client.create(path(resource, "nope"), body))
    assert failed.status == kube.not_found("namespaces", "nope")
    assert client.revision() == before


async def terminating_namespace(client: Client, name: str = "closing") -> Obj:
    """A namespace held in Terminating by an object with a finalizer."""
    await client.create(NAMESPACES, {"metadata": {"name": name}})
    await client.create(path("configmaps", name), {"metadata": {"name": "held", "finalizers": [HOLD]}})
    marked = await client.delete(ns_path(name))
    assert marked["status"]["phase"] == "Terminating"

    async def held_is_marked() -> bool:
        held = await client.get(path("configmaps", name, "held"))
        # A read can see a committed write a moment before the store acknowledges it (its revision):
        # wait for both, so the tests' before/after revisions see no write of the controller's.
        marked_at = int(held["metadata"]["resourceVersion"])
        return "deletionTimestamp" in held["metadata"] and client.revision() >= marked_at

    # Once the controller has marked what it cannot delete, it only looks: no more writes while the test runs.
    await eventually(held_is_marked, "the namespace controller marks the held object")
    return marked


TERMINATING_CASES: list[tuple[str, Obj, str]] = [
    # The name NewForbidden gets is the object's name, or its generateName: no name is generated yet.
    ("name", {"metadata": {"name": "late"}}, "late"),
    ("generateName", {"metadata": {"generateName": "gen-"}}, "gen-"),
]


@pytest.mark.parametrize(("body", "name"), [c[1:] for c in TERMINATING_CASES], ids=[c[0] for c in TERMINATING_CASES])
async def test_creating_in_a_terminating_namespace_is_forbidden(client: Client, body: Obj, name: str) -> None:
    await terminating_namespace(client)
    before = client.revision()
    failed = await refused(client.create(path("configmaps", "closing"), body))
    assert failed.status == kube.forbidden(
        "configmaps",
        name,
        "unable to create new content in namespace closing because it is being terminated",
        [kube.cause("NamespaceTerminating", "namespace closing is being terminated", "metadata.namespace")],
    )
    assert client.revision() == before


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
async def test_the_immortal_namespaces_may_not_be_deleted(client: Client, name: str) -> None:
    # NamespaceLifecycle.Admit: errors.NewForbidden(namespaces, name, "this namespace may not be deleted").
    before = client.revision()
    failed = await refused(client.delete(ns_path(name)))
    assert failed.status == kube.forbidden("namespaces", name, "this namespace may not be deleted")
    assert client.revision() == before
    assert_active_namespace(await client.get(ns_path(name)), name)


# ---------------------------------------------------------------- deletion


async def test_deleting_a_namespace_marks_it_terminating_empties_it_and_then_it_goes(client: Client) -> None:
    await client.create(NAMESPACES, {"metadata": {"name": "doomed"}})
    for i in range(3):
        await client.create(path("configmaps", "doomed"), {"metadata": {"name": f"cm{i}"}})
        await client.create(path("secrets", "doomed"), {"metadata": {"name": f"s{i}"}})
    await client.create(path("configmaps", "default"), {"metadata": {"name": "bystander"}})

    marked = await client.delete(ns_path("doomed"))
    assert marked["kind"] == "Namespace"
    assert marked["status"]["phase"] == "Terminating"
    assert "deletionTimestamp" in marked["metadata"]
    assert marked["spec"]["finalizers"] == ["kubernetes"]

    await eventually(lambda: gone(client, ns_path("doomed")), "the namespace disappears")
    assert await client.names(path("configmaps", "doomed")) == []
    assert await client.names(path("secrets", "doomed")) == []
    assert await client.names(path("configmaps", "default")) == ["bystander"]


async def test_objects_with_finalizers_hold_the_namespace_until_released(client: Client) -> None:
    await client.create(NAMESPACES, {"metadata": {"name": "held"}})
    await client.create(path("configmaps", "held"), {"metadata": {"name": "free"}})
    await client.create(path("configmaps", "held"), {"metadata": {"name": "pinned", "finalizers": [HOLD]}})
    await client.delete(ns_path("held"))

    async def only_pinned_left_and_marked() -> bool:
        _, items = await client.list(path("configmaps", "held"))
        return [i["metadata"]["name"] for i in items] == ["pinned"] and "deletionTimestamp" in items[0]["metadata"]

    await eventually(only_pinned_left_and_marked, "the free object is deleted and the pinned one marked")
    await asyncio.sleep(0.5)  # the controller keeps looking; the namespace must stay while the finalizer does
    still = await client.get(ns_path("held"))
    assert still["status"]["phase"] == "Terminating"
    assert await client.names(path("configmaps", "held")) == ["pinned"]

    pinned = await client.get(path("configmaps", "held", "pinned"))
    released = dict(pinned, metadata={k: v for k, v in pinned["metadata"].items() if k != "finalizers"})
    await client.update(path("configmaps", "held", "pinned"), released)
    await eventually(lambda: gone(client, ns_path("held")), "the namespace disappears once released")


async def test_deleting_a_namespace_that_is_already_terminating_is_a_conflict(client: Client) -> None:
    # namespace REST.Delete: finalizers still pending -> NewConflict(namespaces, name, "The system is ensuring ...").
    marked = await terminating_namespace(client)
    failed = await refused(client.delete(ns_path("closing")))
    assert failed.status == kube.conflict(
        "namespaces",
        "closing",
        "The system is ensuring all content is removed from this namespace.  "
        "Upon completion, this namespace will automatically be purged by the system.",
    )
    assert await client.get(ns_path("closing")) == marked


async def test_a_namespace_uid_precondition_that_does_not_match_is_a_conflict(client: Client) -> None:
    # namespace REST.Delete checks the UID precondition itself, with the storage wording.
    created = await client.create(NAMESPACES, {"metadata": {"name": "ns"}})
    other = "00000000-0000-4000-8000-000000000000"
    failed = await refused(client.delete(ns_path("ns"), preconditions={"uid": other}))
    assert failed.status == kube.conflict(
        "namespaces",
        "ns",
        f"Precondition failed: UID in precondition: {other}, UID in object meta: {created['metadata']['uid']}",
    )
    assert_active_namespace(await client.get(ns_path("ns")), "ns")
