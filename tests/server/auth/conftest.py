"""A real core over LMDB in tmp_path with RBAC started on it, and in-process helpers that call the core as a
given caller (the contextvar the guard sets for a CoreService call)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth import caller
from server.auth.rbac.start import RunningRbac, start_rbac
from server.machinery.user import UserInfo
from server.objects.core import Core

Obj = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"



@pytest.fixture
async def rbac(core: Core) -> AsyncIterator[RunningRbac]:
    started = await start_rbac(core)
    try:
        yield started
    finally:
        await started.stop()


def path(resource: str, namespace: str = "", name: str = "", group: str = GROUP) -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(group=group, version="v1", resource=resource, namespace=namespace, name=name)


def raw(obj: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))


async def create(core: Core, resource: str, obj: Obj, *, as_user: UserInfo | None = None,
                 authorizer: Any = None) -> Obj:
    """Create as the core itself, or as `as_user` authorized by `authorizer`."""
    namespace = obj.get("metadata", {}).get("namespace", "")
    token = caller.bind(caller.Caller(as_user, authorizer)) if as_user is not None else None
    try:
        created = await core.create(core_pb2.CreateRequest(path=path(resource, namespace), object=raw(obj)))
    finally:
        if token is not None:
            caller.unbind(token)
    result: Obj = orjson.loads(created.object.data)
    return result


async def get(core: Core, resource: str, name: str, namespace: str = "") -> Obj:
    got = await core.get(core_pb2.GetRequest(path=path(resource, namespace, name)))
    result: Obj = orjson.loads(got.object.data)
    return result


async def eventually(check: Callable[[], bool], timeout: float = 3.0) -> None:
    """Wait until check() holds (the index and controllers follow the store through a watch)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


def role(name: str, rules: list[Obj], namespace: str = "", **extra: Any) -> Obj:
    metadata: Obj = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": metadata, "rules": rules, **extra}


def binding(name: str, role_kind: str, role_name: str, subjects: list[Obj], namespace: str = "") -> Obj:
    metadata: Obj = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": metadata, "roleRef": {"apiGroup": GROUP, "kind": role_kind, "name": role_name},
            "subjects": subjects}


def user(name: str) -> Obj:
    return {"kind": "User", "apiGroup": GROUP, "name": name}


def group(name: str) -> Obj:
    return {"kind": "Group", "apiGroup": GROUP, "name": name}


def service_account(name: str, namespace: str = "") -> Obj:
    return {"kind": "ServiceAccount", "name": name, **({"namespace": namespace} if namespace else {})}
