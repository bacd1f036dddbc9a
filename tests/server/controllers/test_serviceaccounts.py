"""The default ServiceAccount and kube-root-ca.crt ConfigMap controllers against a real core over LMDB: both
appear in a new namespace, and come back when deleted (the ConfigMap also when its data is changed)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.rootca import DESCRIPTION, RootCAPublisher
from server.controllers.serviceaccounts import ServiceAccountsController
from server.machinery import errors
from server.objects.core import Core
from server.runtime.informer import SharedInformers

CA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
WAIT = 5.0


@pytest.fixture
async def started(core: Core) -> AsyncIterator[None]:
    """Both controllers on one set of shared informers, as server/startup/app.py starts them."""
    informers = SharedInformers(core)
    accounts, root_ca = ServiceAccountsController(core, informers), RootCAPublisher(core, CA, informers)
    await accounts.start()
    await root_ca.start()
    try:
        yield
    finally:
        await root_ca.stop()
        await accounts.stop()


def _path(resource: str, namespace: str = "", name: str = "") -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(version="v1", resource=resource, namespace=namespace, name=name)


async def _eventually(core: Core, resource: str, namespace: str, name: str,
                      want: Any = None) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + WAIT
    while True:
        try:
            got = await core.get(core_pb2.GetRequest(path=_path(resource, namespace, name)))
            obj: dict[str, Any] = orjson.loads(got.object.data)
            if want is None or want(obj):
                return obj
        except errors.ApiError:
            pass
        assert asyncio.get_running_loop().time() < deadline, f"{resource}/{name} in {namespace} never appeared"
        await asyncio.sleep(0.02)


@pytest.mark.parametrize(("resource", "name"), [("serviceaccounts", "default"), ("configmaps", "kube-root-ca.crt")])
async def test_kept_in_every_namespace(core: Core, started: None, resource: str, name: str) -> None:
    await _eventually(core, resource, "kube-system", name)  # namespaces that existed before the start
    await core.create(core_pb2.CreateRequest(path=_path("namespaces"), object=core_pb2.RawObject(
        encoding=core_pb2.ENCODING_JSON, data=b'{"metadata":{"name":"team"}}')))
    first = await _eventually(core, resource, "team", name)
    await core.delete(core_pb2.DeleteRequest(path=_path(resource, "team", name)))
    again = await _eventually(core, resource, "team", name)
    assert again["metadata"]["uid"] != first["metadata"]["uid"]
    if resource == "configmaps":
        assert again["data"] == {"ca.crt": CA}
        assert again["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}


async def test_root_ca_repaired(core: Core, started: None) -> None:
    cm = await _eventually(core, "configmaps", "default", "kube-root-ca.crt")
    cm["data"] = {"ca.crt": "tampered"}
    cm["metadata"]["annotations"] = {"mine": "kept"}
    await core.update(core_pb2.UpdateRequest(path=_path("configmaps", "default", "kube-root-ca.crt"),
                                             object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON,
                                                                       data=orjson.dumps(cm))))
    repaired = await _eventually(core, "configmaps", "default", "kube-root-ca.crt",
                                 lambda o: o.get("data") == {"ca.crt": CA})
    assert repaired["metadata"]["annotations"] == {"mine": "kept", "kubernetes.io/description": DESCRIPTION}


async def test_stopped_and_started_again(core: Core) -> None:
    """A controller stopped (leadership lost) and started again keeps every namespace's object."""
    accounts = ServiceAccountsController(core)
    await accounts.start()
    await accounts.stop()
    assert not accounts.running()
    await core.create(core_pb2.CreateRequest(path=_path("namespaces"), object=core_pb2.RawObject(
        encoding=core_pb2.ENCODING_JSON, data=b'{"metadata":{"name":"later"}}')))
    await accounts.start()
    try:
        assert accounts.running()
        await _eventually(core, "serviceaccounts", "later", "default")
    finally:
        await accounts.stop()
