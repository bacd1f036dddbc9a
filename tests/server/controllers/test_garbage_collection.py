"""Garbage collection of ownerReferences: each propagation policy, cascades, blockOwnerDeletion, absent owners.

ConfigMaps and Secrets own each other in "default"; the collector runs inside the core the fixture
starts, and everything is observed over the gRPC channel. Waiting is polling with a deadline; "nothing
more happens" is checked once the collector is idle (caught up with the store, nothing queued).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.gc.graph import Identity, node_of
from server.objects import render
from server.startup.app import RunningCore
from storage import KeyValue
from tests.server import kube
from tests.server.client import Client, Failed, Obj, path, refused

NS = "default"
CM = path("configmaps", NS)
FG = "foregroundDeletion"
HOLD = "example.com/hold"
NOBODY = "00000000-0000-4000-8000-000000000000"
DEADLINE = 10.0  # seconds anything the collector does may take before the test fails

RESOURCES = {"ConfigMap": "configmaps", "Secret": "secrets", "Namespace": "namespaces"}


def at(kind: str, name: str, namespace: str = NS) -> core_pb2.ResourcePath:
    return path(RESOURCES[kind], "" if kind == "Namespace" else namespace, name)


def ref(owner: Obj, *, block: bool = False) -> Obj:
    """An ownerReference to `owner` (an object as created)."""
    out = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
           "uid": owner["metadata"]["uid"]}
    if block:
        out["blockOwnerDeletion"] = True
    return out


async def make(client: Client, kind: str, name: str, *owners: Obj, namespace: str = NS,
               finalizers: tuple[str, ...] = ()) -> Obj:
    metadata: Obj = {"name": name}
    if owners:
        metadata["ownerReferences"] = list(owners)
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return await client.create(at(kind, "", namespace), {"apiVersion": "v1", "kind": kind, "metadata": metadata})


async def read(client: Client, kind: str, name: str, namespace: str = NS) -> Obj | None:
    try:
        return await client.get(at(kind, name, namespace))
    except Failed as failed:
        assert failed.status["code"] == 404, failed.status
        return None


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not await check():
        assert time.monotonic() < deadline, f"not within {DEADLINE}s: {what}"
        await asyncio.sleep(0.02)


async def gone(client: Client, kind: str, name: str, namespace: str = NS) -> None:
    async def check() -> bool:
        return await read(client, kind, name, namespace) is None

    await eventually(check, f"{kind} {name} deleted")


async def settled(client: Client) -> None:
    """The collector has seen every write so far and has nothing left to do."""
    collector = client.running.garbage_collector

    async def check() -> bool:
        return collector.idle()

    await eventually(check, "the garbage collector idle")


async def release(client: Client, kind: str, name: str) -> None:
    """Remove the HOLD finalizer (a user's controller finishing its work)."""
    obj = await read(client, kind, name)
    assert obj is not None
    obj["metadata"]["finalizers"] = [f for f in obj["metadata"].get("finalizers", []) if f != HOLD]
    await client.update(at(kind, name), obj)


async def tree(client: Client, *, block: bool = True, hold: tuple[str, ...] = ()) -> dict[str, Obj]:
    """owner (ConfigMap) <- child (Secret) <- grandchild (ConfigMap); `hold` names those created with HOLD."""
    owner = await make(client, "ConfigMap", "owner")
    child = await make(client, "Secret", "child", ref(owner, block=block),
                       finalizers=(HOLD,) if "child" in hold else ())
    grandchild = await make(client, "ConfigMap", "grandchild", ref(child, block=block),
                            finalizers=(HOLD,) if "grandchild" in hold else ())
    return {"owner": owner, "child": child, "grandchild": grandchild}


KINDS = {"owner": "ConfigMap", "child": "Secret", "grandchild": "ConfigMap"}


# ---------------------------------------------------------------- the three policies


@pytest.mark.parametrize(
    ("options", "answer_finalizers", "survivors"),
    [
        # Background is every kind's default here (rest.DeleteDependents): the owner goes at once, then the
        # collector deletes the child (its owner is absent), then the grandchild.
        ({}, None, {}),
        ({"propagationPolicy": "Background"}, None, {}),
        ({"orphanDependents": False}, None, {}),
        # Foreground: the owner is marked and waits with foregroundDeletion for its blocking dependents, which
        # are deleted in the foreground themselves (the child has a dependent of its own).
        ({"propagationPolicy": "Foreground"}, [FG], {}),
        # Orphan: the owner is marked with `orphan`; the collector removes the owner's reference from the child
        # (and only from it), then the finalizer.
        ({"propagationPolicy": "Orphan"}, ["orphan"], {"child": [], "grandchild": ["child"]}),
        ({"orphanDependents": True}, ["orphan"], {"child": [], "grandchild": ["child"]}),
    ],
    ids=["default", "background", "orphanDependents-false", "foreground", "orphan", "orphanDependents-true"],
)
async def test_deleting_an_owner_of_a_three_level_tree(
    client: Client, options: Obj, answer_finalizers: list[str] | None, survivors: dict[str, list[str]]
) -> None:
    objs = await tree(client)
    answer = await client.delete(at("ConfigMap", "owner"), **options)
    if answer_finalizers is None:
        assert answer["status"] == "Success" and answer["details"]["uid"] == objs["owner"]["metadata"]["uid"]
        assert await read(client, "ConfigMap", "owner") is None
    else:
        m = answer["metadata"]
        assert (m["finalizers"], m["deletionGracePeriodSeconds"]) == (answer_finalizers, 0)
        assert m["deletionTimestamp"] >= objs["owner"]["metadata"]["creationTimestamp"]
    await gone(client, "ConfigMap", "owner")
    for name in ("child", "grandchild"):
        if name not in survivors:
            await gone(client, KINDS[name], name)
    await settled(client)
    for name, owners in survivors.items():
        obj = await read(client, KINDS[name], name)
        assert obj is not None, f"{name} was deleted"
        assert [r["name"] for r in obj["metadata"].get("ownerReferences", [])] == owners
        assert obj["metadata"]["uid"] == objs[name]["metadata"]["uid"]
        assert "deletionTimestamp" not in obj["metadata"]


@pytest.mark.parametrize("policy", ["Background", "Foreground", "Orphan"])
async def test_a_wide_tree(client: Client, policy: str) -> None:
    # 50 children, each with a grandchild: the collector's workers go through them concurrently.
    owner = await make(client, "ConfigMap", "owner")
    children = await asyncio.gather(*(make(client, "Secret", f"child-{i}", ref(owner, block=True)) for i in range(50)))
    await asyncio.gather(*(make(client, "ConfigMap", f"grandchild-{i}", ref(c, block=True))
                           for i, c in enumerate(children)))
    await client.delete(at("ConfigMap", "owner"), propagationPolicy=policy)
    await gone(client, "ConfigMap", "owner")
    await settled(client)
    secrets, configmaps = await client.names(path("secrets", NS)), await client.names(CM)
    if policy == "Orphan":
        assert len(secrets) == 50 and all(not s["metadata"].get("ownerReferences")
                                          for s in (await client.list(path("secrets", NS)))[1])
        assert len([n for n in configmaps if n.startswith("grandchild-")]) == 50
    else:
        assert secrets == [] and [n for n in configmaps if n.startswith(("child-", "grandchild-"))] == []


# ---------------------------------------------------------------- blockOwnerDeletion


@pytest.mark.parametrize(
    ("block", "hold", "waits_for"),
    [
        # The owner waits for a blocking dependent still held by another finalizer ...
        (True, ("child",), "child"),
        # ... and, through the child deleted in the foreground, for a blocking grandchild.
        (True, ("grandchild",), "grandchild"),
        # Dependents without blockOwnerDeletion are deleted too, but nobody waits for them.
        (False, ("child",), None),
        (False, ("grandchild",), None),
    ],
    ids=["blocking-child", "blocking-grandchild", "non-blocking-child", "non-blocking-grandchild"],
)
async def test_foreground_deletion_waits_only_for_blocking_dependents(
    client: Client, block: bool, hold: tuple[str, ...], waits_for: str | None
) -> None:
    objs = await tree(client, block=block, hold=hold)
    held = hold[0]
    await client.delete(at("ConfigMap", "owner"), propagationPolicy="Foreground")

    async def held_marked() -> bool:
        obj = await read(client, KINDS[held], held)
        return obj is not None and "deletionTimestamp" in obj["metadata"]

    await eventually(held_marked, f"{held} marked for deletion")
    if waits_for is None:
        await gone(client, "ConfigMap", "owner")
    await settled(client)
    owner = await read(client, "ConfigMap", "owner")
    if waits_for is not None:
        assert owner is not None and owner["metadata"]["finalizers"] == [FG]
        if waits_for == "grandchild":  # the child waits for it too, deleted in the foreground
            child = await read(client, "Secret", "child")
            assert child is not None and child["metadata"]["finalizers"] == [FG]
    else:
        assert owner is None
    await release(client, KINDS[held], held)
    for name in objs:
        await gone(client, KINDS[name], name)


async def test_a_dependent_with_another_owner_loses_the_reference_instead(client: Client) -> None:
    # classifyReferences: an existing owner is "solid"; references to an owner deleting its dependents are
    # removed from such a dependent, which stays.
    owner = await make(client, "ConfigMap", "owner")
    other = await make(client, "Secret", "other")
    await make(client, "ConfigMap", "shared", ref(owner, block=True), ref(other))
    await client.delete(at("ConfigMap", "owner"), propagationPolicy="Foreground")
    await gone(client, "ConfigMap", "owner")
    await settled(client)
    shared = await read(client, "ConfigMap", "shared")
    assert shared is not None and shared["metadata"]["ownerReferences"] == [ref(other)]


# ---------------------------------------------------------------- absent owners


async def _configmap_owner_elsewhere(client: Client) -> Obj:
    await client.create(path("namespaces"), {"metadata": {"name": "elsewhere"}})
    owner = await make(client, "ConfigMap", "owner", namespace="elsewhere")
    return ref(owner)


async def _configmap_owner_replaced(client: Client) -> Obj:
    owner = await make(client, "ConfigMap", "owner")
    return {**ref(owner), "uid": NOBODY}


async def _namespace_owner(client: Client) -> Obj:
    return ref({"apiVersion": "v1", "kind": "Namespace", **await client.get(path("namespaces", "", NS))})


async def _never_existed(client: Client) -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "name": "nobody", "uid": NOBODY}


async def _existing_secret(client: Client) -> Obj:
    return ref(await make(client, "Secret", "owner"))


@pytest.mark.parametrize(
    ("owner_of", "collected"),
    [
        (_never_existed, True),
        # The name exists, but with another uid: that owner is not this dependent's.
        (_configmap_owner_replaced, True),
        # A namespaced owner is looked for in its dependent's namespace only.
        (_configmap_owner_elsewhere, True),
        # A cluster-scoped owner is looked for cluster-wide.
        (_namespace_owner, False),
        (_existing_secret, False),
    ],
    ids=["never-existed", "uid-differs", "other-namespace", "cluster-scoped-owner", "existing-owner"],
)
async def test_a_dependent_is_collected_only_once_its_owner_is_certainly_absent(
    client: Client, owner_of: Callable[[Client], Awaitable[Obj]], collected: bool
) -> None:
    owner = await owner_of(client)
    dependent = await make(client, "ConfigMap", "dependent", owner)
    if collected:
        await gone(client, "ConfigMap", "dependent")
        return
    await settled(client)
    assert await read(client, "ConfigMap", "dependent") == dependent


async def test_references_to_absent_owners_are_dropped_while_one_owner_exists(client: Client) -> None:
    owner = await make(client, "Secret", "owner")
    absent = {"apiVersion": "v1", "kind": "ConfigMap", "name": "nobody", "uid": NOBODY}
    await make(client, "ConfigMap", "dependent", absent, ref(owner))

    async def dropped() -> bool:
        obj = await read(client, "ConfigMap", "dependent")
        assert obj is not None
        return bool(obj["metadata"]["ownerReferences"] == [ref(owner)])

    await eventually(dropped, "the absent owner's reference dropped")


async def test_a_cluster_scoped_object_naming_a_namespaced_owner_is_left_alone(client: Client) -> None:
    # isDangling: namespacedOwnerOfClusterScopedObjectErr; the reference can never be resolved.
    absent = {"apiVersion": "v1", "kind": "ConfigMap", "name": "nobody", "uid": NOBODY}
    ns = await client.create(path("namespaces"), {"metadata": {"name": "owned", "ownerReferences": [absent]}})
    await settled(client)
    assert await client.get(path("namespaces", "", "owned")) == ns


@pytest.mark.parametrize("policy", ["Background", "Foreground", "Orphan"])
async def test_a_namespace_as_owner_of_objects_in_other_namespaces(client: Client, policy: str) -> None:
    # The namespace controller empties the namespace and removes `kubernetes` from spec.finalizers; the
    # collector deals with the dependents outside it and the GC finalizer in metadata.finalizers.
    ns = await client.create(path("namespaces"), {"metadata": {"name": "team"}})
    await make(client, "ConfigMap", "inside", namespace="team")
    await make(client, "ConfigMap", "dependent", ref({"apiVersion": "v1", "kind": "Namespace", **ns}, block=True))
    await client.delete(path("namespaces", "", "team"), propagationPolicy=policy)
    await gone(client, "Namespace", "team")
    assert await read(client, "ConfigMap", "inside", "team") is None
    if policy != "Orphan":
        await gone(client, "ConfigMap", "dependent")
        return
    await settled(client)
    dependent = await read(client, "ConfigMap", "dependent")
    assert dependent is not None and "ownerReferences" not in dependent["metadata"]


async def test_dependents_of_an_owner_deleted_while_the_collector_was_stopped_are_collected(client: Client) -> None:
    # At start-up the graph is a list of the store: a dependent whose owner is not in it is checked.
    collector = client.running.garbage_collector
    owner = await make(client, "ConfigMap", "owner")
    await make(client, "ConfigMap", "dependent", ref(owner))
    await settled(client)
    await collector.stop()
    await client.delete(at("ConfigMap", "owner"))
    assert await read(client, "ConfigMap", "dependent") is not None
    restarted = type(collector)(client.running.core)
    restarted.start()
    try:
        await gone(client, "ConfigMap", "dependent")
    finally:
        await restarted.stop()


# ---------------------------------------------------------------- what a watcher sees


def _summary(event: tuple[str, Obj]) -> tuple[str, str, Any, Any]:
    kind, obj = event
    m = obj["metadata"]
    return kind, m["name"], m.get("finalizers"), [r["name"] for r in m.get("ownerReferences", [])]


@pytest.mark.parametrize(
    ("policy", "events"),
    [
        ("Background", [("DELETED", "owner", None, []), ("DELETED", "dependent", None, ["owner"])]),
        ("Foreground", [("MODIFIED", "owner", [FG], []), ("DELETED", "dependent", None, ["owner"]),
                        ("DELETED", "owner", [FG], [])]),
        ("Orphan", [("MODIFIED", "owner", ["orphan"], []), ("MODIFIED", "dependent", None, []),
                    ("DELETED", "owner", ["orphan"], [])]),
    ],
)
async def test_a_watcher_sees_each_step(client: Client, policy: str, events: list[Any]) -> None:
    owner = await make(client, "ConfigMap", "owner")
    dependent = await make(client, "ConfigMap", "dependent", ref(owner, block=True))
    await client.delete(at("ConfigMap", "owner"), propagationPolicy=policy)
    seen = await client.events(CM, lambda e: e[0] == "DELETED" and e[1]["metadata"]["name"] == events[-1][1],
                               timeout=DEADLINE, resourceVersion=dependent["metadata"]["resourceVersion"])
    assert [_summary(e) for e in seen] == events
    for kind, obj in seen:
        if kind == "MODIFIED" and obj["metadata"]["name"] == "owner":
            assert obj["metadata"]["deletionTimestamp"] and obj["metadata"]["deletionGracePeriodSeconds"] == 0


# ---------------------------------------------------------------- the apiserver's side


@pytest.mark.parametrize(
    ("first", "second", "finalizers"),
    [
        # deletionFinalizersForGarbageCollection runs on every delete of an object not deleted gracefully:
        # a later delete may swap the collector's finalizer, or remove it (and with it, the object).
        ({"propagationPolicy": "Foreground"}, {"propagationPolicy": "Orphan"}, ["orphan"]),
        ({"propagationPolicy": "Orphan"}, {"propagationPolicy": "Foreground"}, [FG]),
        ({"propagationPolicy": "Orphan"}, {"orphanDependents": False}, None),
        ({"propagationPolicy": "Foreground"}, {"propagationPolicy": "Background"}, None),
        # No options: the finalizer already there decides, and nothing is written.
        ({"propagationPolicy": "Foreground"}, {}, [FG]),
        ({"propagationPolicy": "Orphan"}, {}, ["orphan"]),
    ],
    ids=["foreground-orphan", "orphan-foreground", "orphan-orphanDependents-false", "foreground-background",
         "foreground-none", "orphan-none"],
)
async def test_deleting_again_changes_the_collectors_finalizer(
    client: Client, first: Obj, second: Obj, finalizers: list[str] | None
) -> None:
    await client.running.garbage_collector.stop()  # the apiserver's side alone: nothing removes the finalizers
    await make(client, "ConfigMap", "owner")
    marked = await client.delete(at("ConfigMap", "owner"), **first)
    before = client.revision()
    again = await client.delete(at("ConfigMap", "owner"), **second)
    if finalizers is None:
        assert again["status"] == "Success"
        assert await read(client, "ConfigMap", "owner") is None
        return
    assert again["metadata"]["finalizers"] == finalizers
    assert again["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]
    assert client.revision() == before + (second != {})


async def test_a_dry_run_foreground_delete_marks_nothing(client: Client) -> None:
    created = await make(client, "ConfigMap", "owner")
    before = client.revision()
    answer = await client.delete(at("ConfigMap", "owner"), propagationPolicy="Foreground", dryRun=["All"])
    assert answer["metadata"]["finalizers"] == [FG] and "deletionTimestamp" in answer["metadata"]
    assert client.revision() == before
    assert await client.get(at("ConfigMap", "owner")) == created


async def test_delete_collection_applies_the_policy_to_each_object(client: Client) -> None:
    owner = await make(client, "Secret", "owner")
    await make(client, "ConfigMap", "dependent", ref(owner))
    deleted = await client.delete_collection(path("secrets", NS), delete_options={"propagationPolicy": "Orphan"})
    assert len(deleted.items) == 1
    await gone(client, "Secret", "owner")
    await settled(client)
    dependent = await read(client, "ConfigMap", "dependent")
    assert dependent is not None and "ownerReferences" not in dependent["metadata"]


async def test_orphan_dependents_and_a_propagation_policy_together_are_invalid(client: Client) -> None:
    # ValidateDeleteOptions.
    await make(client, "ConfigMap", "owner")
    failed = await refused(client.delete(at("ConfigMap", "owner"), orphanDependents=True,
                                         propagationPolicy="Foreground"))
    assert failed.status == kube.invalid_options("DeleteOptions", [kube.field_invalid(
        "propagationPolicy", "Foreground", "orphanDependents and deletionPropagation cannot be both set")])


# ---------------------------------------------------------------- the graph's nodes, read fast or parsed

OWNER_REF = {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "o-1", "blockOwnerDeletion": True}


@pytest.mark.parametrize(("metadata", "data"), [
    ({"name": "a", "namespace": "default", "uid": "u-1"}, {"uid": "not-this"}),
    ({"name": "a", "generateName": "a", "namespace": "default", "uid": "u-2", "labels": {"x": "y"}}, {}),
    ({"name": "a", "namespace": "default", "uid": "u-3", "ownerReferences": [OWNER_REF]}, {}),
    ({"name": "a", "namespace": "default", "uid": "u-4", "deletionTimestamp": "2026-01-01T00:00:00Z",
      "finalizers": ["foregroundDeletion"]}, {}),
    ({"name": "a", "namespace": "default", "uid": "u-5", "annotations": {"n": '"ownerReferences": [1]'}}, {}),
    ({"name": "a", "namespace": "default", "uid": "u-6"}, {"ownerReferences": "a key elsewhere: parsed"}),
])
def test_a_node_read_from_the_start_of_the_json_is_the_parsed_one(running: RunningCore, metadata: Obj,
                                                                   data: Obj) -> None:
    resource = running.core.registry.by_group_resource("", "configmaps")[0]
    obj = {"metadata": metadata, "data": data}
    kv = KeyValue(resource.key("default", "a"), render.to_value(resource, obj), 2, 2, 1)
    identity = Identity(metadata["uid"], "", "v1", "configmaps", "ConfigMap", "default", "a")
    assert running.garbage_collector._node(kv) == node_of(identity, obj)
