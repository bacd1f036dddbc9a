"""Get: the resourceVersion table for get, NotFound, unknown resources and verbs a resource does not serve."""

from __future__ import annotations

import asyncio
import time

import pytest

from capstan.api.core.v1 import core_pb2 as core_v1
from capstan.core.v1 import core_service_pb2 as core_pb2
from tests.server import kube
from tests.server.client import PROTOBUF, Client, path, refused

CM = path("configmaps", "default")
A = path("configmaps", "default", "a")


async def test_get_answers_the_stored_object(client: Client) -> None:
    created = await client.create(CM, {"metadata": {"name": "a", "labels": {"x": "y"}}, "data": {"k": "v"}})
    got = await client.get(A)
    assert got == created
    assert (got["kind"], got["apiVersion"]) == ("ConfigMap", "v1")


async def test_get_answers_protobuf_when_asked(client: Client) -> None:
    created = await client.create(CM, {"metadata": {"name": "a"}, "data": {"k": "v"}})
    got = await client.get_raw(A, accept=PROTOBUF)
    assert got.encoding == PROTOBUF
    message = core_v1.ConfigMap.FromString(got.data)
    assert message.metadata.resourceVersion == created["metadata"]["resourceVersion"]
    assert (message.metadata.name, message.metadata.uid, dict(message.data)) == (
        "a",
        created["metadata"]["uid"],
        {"k": "v"},
    )


@pytest.mark.parametrize("rv", ["", "0", "created", "current"])
async def test_resource_version_unset_zero_or_not_newer_than_current_answers_the_latest(
    client: Client, rv: str
) -> None:
    # get: unset -> Most Recent, "0" -> Any, N -> Not older than N.
    created = await client.create(CM, {"metadata": {"name": "a"}, "data": {"k": "1"}})
    updated, _ = await client.update(A, {"metadata": {"name": "a"}, "data": {"k": "2"}})
    await client.create(CM, {"metadata": {"name": "later"}})
    wanted = {
        "created": created["metadata"]["resourceVersion"],
        "current": str(client.revision()),
    }.get(rv, rv)
    assert await client.get(A, resourceVersion=wanted) == updated


async def test_a_resource_version_that_arrives_while_waiting_is_served(client: Client) -> None:
    await client.create(CM, {"metadata": {"name": "a"}})
    pending = asyncio.ensure_future(client.get(A, resourceVersion=str(client.revision() + 1)))
    await asyncio.sleep(0.1)  # the get is now waiting for the revision (the store waits up to 0.5 s)
    assert not pending.done()
    await client.create(CM, {"metadata": {"name": "b"}})
    assert (await pending)["metadata"]["name"] == "a"


async def test_a_resource_version_in_the_future_times_out_with_too_large_resource_version(client: Client) -> None:
    # The watch cache's waitUntilFreshAndBlock: storage.NewTooLargeResourceVersionError(rv, current, 1).
    await client.create(CM, {"metadata": {"name": "a"}})
    current = client.revision()
    started = time.monotonic()
    failed = await refused(client.get(A, resourceVersion=str(current + 100)))
    waited = time.monotonic() - started
    assert failed.status == kube.too_large_resource_version(current + 100, current)
    assert 0.4 <= waited < 5, waited  # the fixture's store waits 0.5 s for a future revision


async def test_a_missing_object_is_not_found(client: Client) -> None:
    failed = await refused(client.get(path("configmaps", "default", "missing")))
    assert failed.status == kube.not_found("configmaps", "missing")


async def test_an_object_in_another_namespace_is_not_found(client: Client) -> None:
    await client.create(CM, {"metadata": {"name": "a"}})
    failed = await refused(client.get(path("configmaps", "kube-system", "a")))
    assert failed.status == kube.not_found("configmaps", "a")


async def test_a_missing_namespace_object_is_not_found(client: Client) -> None:
    failed = await refused(client.get(path("namespaces", name="missing")))
    assert failed.status == kube.not_found("namespaces", "missing")


NOT_SERVED: list[tuple[str, core_pb2.ResourcePath]] = [
    ("unknown resource", path("widgets", "default", "a")),
    ("unknown group", path("configmaps", "default", "a", group="example.com")),
    ("unknown version", path("configmaps", "default", "a", version="v2")),
    ("unknown subresource", path("configmaps", "default", "a", subresource="status")),
    ("namespace on a cluster-scoped resource", path("namespaces", "default", "default")),
]


@pytest.mark.parametrize("target", [t for _, t in NOT_SERVED], ids=[i for i, _ in NOT_SERVED])
async def test_what_the_server_does_not_serve_is_not_found(client: Client, target: core_pb2.ResourcePath) -> None:
    failed = await refused(client.get(target))
    assert failed.status == kube.failure(404, "NotFound", "the server could not find the requested resource")


async def test_a_verb_a_subresource_does_not_serve_is_method_not_allowed(client: Client) -> None:
    # namespaces/finalize serves only update (FinalizeREST implements Update), so GET has no route.
    failed = await refused(client.get(path("namespaces", name="default", subresource="finalize")))
    assert failed.status == kube.method_not_allowed()


async def test_deletecollection_on_namespaces_is_method_not_allowed(client: Client) -> None:
    # Namespaces have no deletecollection (kubernetes#46407); the route is missing, so go-restful answers 405
    # through the apiserver's ServiceErrorHandler: "the server does not allow this method on the requested resource".
    before = client.revision()
    failed = await refused(client.delete_collection(path("namespaces")))
    assert failed.status == kube.method_not_allowed()
    assert client.revision() == before
    assert len(await client.names(path("namespaces"))) == 4
