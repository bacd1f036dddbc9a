"""CRD conversion by webhook through the CoreService: a real HTTPS conversion webhook started by the test
(capstan/testing/webhooks.py), a real core over gRPC. Objects are stored at the storage version (v1, `color`)
and converted for every read, list, watch and write in v2 (`paint`); failures answer as kube-apiserver's."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web

from capstan.testing.webhooks import WebhookServer, serve
from server.crd.conversion import REVIEW_VERSIONS
from tests.server.client import Client, path, refused
from tests.server.crd.test_crds import CRDS, GROUP, established

Obj = dict[str, Any]
OPEN = {"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
V1 = path("widgets", "default", group=GROUP, version="v1")
V2 = path("widgets", "default", group=GROUP, version="v2")


def convert(request: Obj) -> Obj:
    """v1 keeps spec.color, v2 spec.paint."""
    desired = request["desiredAPIVersion"]
    out = []
    for obj in request["objects"]:
        obj = copy.deepcopy(obj)
        spec = obj.setdefault("spec", {})
        if desired.endswith("/v2") and "color" in spec:
            spec["paint"] = spec.pop("color")
        elif desired.endswith("/v1") and "paint" in spec:
            spec["color"] = spec.pop("paint")
        obj["apiVersion"] = desired
        out.append(obj)
    return {"convertedObjects": out, "result": {"status": "Success"}}


def conversion_crd(client_config: Obj, review_versions: list[str]) -> Obj:
    versions = [{"name": name, "served": True, "storage": name == "v1", "schema": {"openAPIV3Schema": OPEN}}
                for name in ("v1", "v2")]
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
                 "versions": versions,
                 "conversion": {"strategy": "Webhook", "webhook": {
                     "clientConfig": client_config, "conversionReviewVersions": review_versions}}},
    }


async def install(client: Client, hook: WebhookServer, review_versions: list[str] | None = None) -> Obj:
    await client.create(CRDS, conversion_crd(hook.client_config(), review_versions or ["v1"]))
    return await established(client, f"widgets.{GROUP}")


def widget(name: str, version: str, **spec: Any) -> Obj:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize("review_version", REVIEW_VERSIONS)
async def test_objects_are_stored_at_the_storage_version_and_converted_for_every_other(
        client: Client, review_version: str) -> None:
    async with serve(convert) as hook:
        crd = await install(client, hook, [review_version])
        assert crd["status"]["storedVersions"] == ["v1"]
        await client.create(V1, widget("a", "v1", color="red"))
        assert hook.requests == []  # written and answered at the storage version: no call
        got = await client.get(path("widgets", "default", "a", group=GROUP, version="v2"))
        assert (got["apiVersion"], got["spec"]) == (f"{GROUP}/v2", {"paint": "red"})
        assert hook.requests[-1]["apiVersion"] == f"apiextensions.k8s.io/{review_version}"
        assert hook.requests[-1]["request"]["desiredAPIVersion"] == f"{GROUP}/v2"

        created = await client.create(V2, widget("b", "v2", paint="green"))
        assert (created["apiVersion"], created["spec"]) == (f"{GROUP}/v2", {"paint": "green"})
        as_v1 = await client.get(path("widgets", "default", "b", group=GROUP, version="v1"))
        assert as_v1["spec"] == {"color": "green"}

        calls = len(hook.requests)
        _, items = await client.list(V2)
        assert [(i["metadata"]["name"], i["spec"]) for i in items] == [("a", {"paint": "red"}),
                                                                        ("b", {"paint": "green"})]
        assert len(hook.requests) == calls + 1  # the page in one review
        assert len(hook.requests[-1]["request"]["objects"]) == 2

        got["spec"]["paint"] = "blue"
        updated, _ = await client.update(path("widgets", "default", "a", group=GROUP, version="v2"), got)
        assert updated["spec"] == {"paint": "blue"}
        assert updated["metadata"]["resourceVersion"] != got["metadata"]["resourceVersion"]
        as_v1 = await client.get(path("widgets", "default", "a", group=GROUP, version="v1"))
        assert as_v1["spec"] == {"color": "blue"}


async def test_a_watch_sees_writes_in_another_version_converted(client: Client) -> None:
    async with serve(convert) as hook:
        await install(client, hook)
        created = await client.create(V1, widget("a", "v1", color="red"))
        rv = created["metadata"]["resourceVersion"]

        async def write_in_v2() -> None:
            await asyncio.sleep(0.1)
            current = await client.get(path("widgets", "default", "a", group=GROUP, version="v2"))
            current["spec"]["paint"] = "blue"
            await client.update(path("widgets", "default", "a", group=GROUP, version="v2"), current)

        writer = asyncio.create_task(write_in_v2())
        seen_v1 = await client.events(V1, lambda e: e[0] == "MODIFIED", resourceVersion=rv)
        await writer
        assert [(t, o["apiVersion"], o["spec"]) for t, o in seen_v1] == [("MODIFIED", f"{GROUP}/v1",
                                                                          {"color": "blue"})]
        seen_v2 = await client.events(V2, lambda e: e[0] == "MODIFIED", resourceVersion=rv)
        assert [(t, o["apiVersion"], o["spec"]) for t, o in seen_v2] == [("MODIFIED", f"{GROUP}/v2",
                                                                          {"paint": "blue"})]
        initial = await client.events(V2, lambda e: e[0] == "ADDED", resourceVersion="0")
        assert initial[0][1]["spec"] == {"paint": "blue"}


def failing(request: Obj) -> Obj:
    return {"result": {"status": "Failure", "message": "cannot convert today"}}


def wrong_version(request: Obj) -> Obj:
    answer = convert(request)
    for obj in answer["convertedObjects"]:
        obj["apiVersion"] = f"{GROUP}/v3"
    return answer


def too_few(request: Obj) -> Obj:
    return {"convertedObjects": [], "result": {"status": "Success"}}


def server_error(request: Obj) -> web.Response:
    return web.Response(status=500, text="boom")


GVK = f"{GROUP}/v1, Kind=Widget"
# (case, handler, the message every read in v2 fails with)
FAILURES: list[tuple[str, Callable[[Obj], Any], str]] = [
    ("failure result", failing, f"conversion webhook for {GVK} returned failure: cannot convert today"),
    ("wrong apiVersion", wrong_version, f"conversion webhook for {GVK} returned invalid converted object at "
                                        f"index 0: invalid groupVersion (expected {GROUP}/v2, received {GROUP}/v3)"),
    ("too few objects", too_few, f"conversion webhook for {GVK} returned 0 objects, expected 1"),
    ("HTTP 500", server_error, f"conversion webhook for {GVK} failed: an error on the server (boom) has prevented "
                               "the request from succeeding"),
]


@pytest.mark.parametrize(("handler", "message"), [c[1:] for c in FAILURES], ids=[c[0] for c in FAILURES])
async def test_conversion_failures(client: Client, handler: Callable[[Obj], Any], message: str) -> None:
    async with serve(handler) as hook:
        await install(client, hook)
        await client.create(V1, widget("a", "v1", color="red"))
        failed = await refused(client.get(path("widgets", "default", "a", group=GROUP, version="v2")))
        assert (failed.status["code"], failed.status["message"]) == (500, message)
        failed = await refused(client.list(V2))  # a list fails whole
        assert failed.status["message"] == message
        failed = await refused(client.create(V2, widget("b", "v2", paint="green")))
        assert failed.status["message"] == message.replace(f"{GROUP}/v1,", f"{GROUP}/v2,").replace(
            f"expected {GROUP}/v2", f"expected {GROUP}/v1")
        assert await client.names(V1) == ["a"]  # the storage version needs no call
        events = await client.events(V2, lambda e: e[0] == "ERROR", resourceVersion="0")
        assert [(t, o["code"], o["message"]) for t, o in events] == [("ERROR", 500, message)]


async def test_unreachable_webhook(client: Client) -> None:
    await client.create(CRDS, conversion_crd({"url": "https://127.0.0.1:9/convert"}, ["v1"]))
    await established(client, f"widgets.{GROUP}")
    await client.create(V1, widget("a", "v1", color="red"))
    failed = await refused(client.get(path("widgets", "default", "a", group=GROUP, version="v2")))
    assert failed.status["message"] == (
        f'conversion webhook for {GVK} failed: Post "https://127.0.0.1:9/convert?timeout=30s": '
        "dial tcp 127.0.0.1:9: connect: connection refused")


async def storage_moved(client: Client, version: str) -> None:
    """Once the core serves the CRD's versions with `version` as their storage version."""
    for _ in range(500):
        served = client.running.core.registry.get(GROUP, "v1", "widgets")
        if served is not None and served.converter is not None and served.converter.storage_version == version:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the storage version did not become {version}")


async def test_objects_stored_before_the_storage_version_changed_convert_from_their_own(client: Client) -> None:
    """As kube reads etcd's copies: each object is converted from the version it was written at, so an object
    written at v1 is not read as if it were v2 after v2 becomes the storage version, and a write (the storage
    version migrator's no-op update) moves it to v2."""
    async with serve(convert) as hook:
        crd = await install(client, hook)
        await client.create(V1, widget("old", "v1", color="red"))
        for version in crd["spec"]["versions"]:
            version["storage"] = version["name"] == "v2"
        moved, _ = await client.update(path("customresourcedefinitions", name=f"widgets.{GROUP}",
                                            group="apiextensions.k8s.io"), crd)
        assert moved["status"]["storedVersions"] == ["v1", "v2"]
        await storage_moved(client, "v2")
        await client.create(V2, widget("new", "v2", paint="green"))

        calls = len(hook.requests)
        as_v1 = await client.get(path("widgets", "default", "old", group=GROUP, version="v1"))
        assert as_v1["spec"] == {"color": "red"}
        assert len(hook.requests) == calls  # stored at v1: read at v1 without a call
        as_v2 = await client.get(path("widgets", "default", "old", group=GROUP, version="v2"))
        assert (as_v2["apiVersion"], as_v2["spec"]) == (f"{GROUP}/v2", {"paint": "red"})
        sent = hook.requests[-1]["request"]
        assert [o["apiVersion"] for o in sent["objects"]] == [f"{GROUP}/v1"]

        for version, want in (("v1", [("new", {"color": "green"}), ("old", {"color": "red"})]),
                              ("v2", [("new", {"paint": "green"}), ("old", {"paint": "red"})])):
            _, items = await client.list(path("widgets", "default", group=GROUP, version=version))
            assert [(i["metadata"]["name"], i["spec"]) for i in items] == want
            assert {i["apiVersion"] for i in items} == {f"{GROUP}/{version}"}

        # a no-op update in the storage version rewrites the object at it, as the storage version migrator's does
        rewritten, _ = await client.update(path("widgets", "default", "old", group=GROUP, version="v2"), as_v2)
        assert rewritten["metadata"]["resourceVersion"] != as_v2["metadata"]["resourceVersion"]
        again, _ = await client.update(path("widgets", "default", "old", group=GROUP, version="v2"), rewritten)
        assert again["metadata"]["resourceVersion"] == rewritten["metadata"]["resourceVersion"]  # now a no-op
        calls = len(hook.requests)
        assert (await client.get(path("widgets", "default", "old", group=GROUP, version="v2")))["spec"] == {
            "paint": "red"}
        assert len(hook.requests) == calls  # stored at v2 now
        as_v1 = await client.get(path("widgets", "default", "old", group=GROUP, version="v1"))
        assert as_v1["spec"] == {"color": "red"}
        assert hook.requests[-1]["request"]["objects"][0]["apiVersion"] == f"{GROUP}/v2"
