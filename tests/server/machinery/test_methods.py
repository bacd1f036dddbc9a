"""The CoreService method table (server/machinery/methods.py) against what it drives: every RPC of the service's
descriptor has one line; the gateway's clients (in-process, gRPC, pool), the guard and the Core expose exactly
the table's methods, typed as the descriptor says, and each call reaches the real core through each transport;
the gRPC servicer serves exactly them; the guard authorizes each method as the table says (kube's RequestInfo);
the pool resends after a lost core exactly what the table's retry rule allows.
"""

from __future__ import annotations

import typing
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest

from capstan.cli.inprocess import InProcessClient
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.client import CoreClient, CoreError
from gateway.transport import pool
from gateway.transport.grpc import GrpcClient
from gateway.transport.pool import PoolClient, retry_safe
from server.auth.attributes import Attributes, Decision
from server.auth.authorizer import AlwaysAllow, Rules
from server.auth.config import INSECURE
from server.auth.guard import Constant, GuardedCore
from server.kinds import BUILTIN
from server.machinery import methods
from server.machinery.credentials import Credentials
from server.machinery.errors import ApiError
from server.machinery.methods import BY_NAME, METHODS, SERVICE, Retry
from server.machinery.user import UserInfo
from server.objects.core import Core
from server.registry.resources import Registry
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

Obj = dict[str, Any]
USER = UserInfo("tester", groups=("team",))


def path(resource: str, namespace: str = "", name: str = "", *, group: str = "", version: str = "v1",
         subresource: str = "") -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(group=group, version=version, resource=resource, namespace=namespace, name=name,
                                 subresource=subresource)


def json_object(obj: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))


# ---- the table against the descriptor


def test_every_rpc_of_the_descriptor_has_one_line() -> None:
    assert [method.name for method in METHODS] == [rpc.name for rpc in SERVICE.methods]
    for rpc in SERVICE.methods:
        method = BY_NAME[rpc.name]
        assert method.request.DESCRIPTOR is rpc.input_type
        assert method.response.DESCRIPTOR is rpc.output_type
        assert method.request is getattr(core_pb2, rpc.input_type.name)
        assert method.streaming is rpc.server_streaming
        assert method.path == f"/capstan.core.v1.CoreService/{rpc.name}"


# What each method is, as kube-apiserver and the rules the table replaced say: the verb it is authorized as,
# whether it only reads, when the pool resends it, whether the Core runs it, whether audit records it, where its
# dryRun and fieldManager options are.
@pytest.mark.parametrize("name,verb,read_only,retry,core,audited,dry_run,field_manager", [
    ("Create", "create", False, Retry.DRY_RUN, True, True, "options", "options"),
    ("Get", "get", True, Retry.ALWAYS, True, True, "", ""),
    ("List", "list", True, Retry.ALWAYS, True, True, "", ""),
    ("Update", "update", False, Retry.PRECONDITIONED, True, True, "options", "options"),
    ("Patch", "patch", False, Retry.PRECONDITIONED, True, True, "options", "options"),
    ("Delete", "delete", False, Retry.PRECONDITIONED, True, True, "options", ""),
    ("DeleteCollection", "deletecollection", False, Retry.DRY_RUN, True, True, "delete_options", ""),
    ("Watch", "watch", True, Retry.ALWAYS, True, True, "", ""),
    ("Discover", "get", True, Retry.ALWAYS, True, True, "", ""),
    ("RegisterDescriptors", "create", False, Retry.ALWAYS, True, True, "", ""),
    ("Access", "", True, Retry.ALWAYS, False, True, "", ""),
    ("IssuerDocument", "get", True, Retry.ALWAYS, False, False, "", ""),
    ("Proxy", "", True, Retry.ALWAYS, False, False, "", ""),
    ("Metrics", "get", True, Retry.ALWAYS, False, False, "", ""),
])
def test_what_each_method_is(name: str, verb: str, read_only: bool, retry: Retry, core: bool, audited: bool,
                             dry_run: str, field_manager: str) -> None:
    method = BY_NAME[name]
    assert (method.verb, method.read_only, method.retry, method.core, method.audited, method.dry_run,
            method.field_manager) == (verb, read_only, retry, core, audited, dry_run, field_manager)


# ---- what exposes the methods


@pytest.mark.parametrize("cls", [CoreClient, InProcessClient, GrpcClient, PoolClient, GuardedCore])
def test_each_caller_exposes_exactly_the_tables_methods(cls: type) -> None:
    assert methods.attributes(cls) == methods.BY_PYTHON_NAME


LIFECYCLE = {"close"}  # the Core's own life, not an RPC


def test_the_core_has_a_verb_for_each_method_it_runs() -> None:
    verbs = {name for name, value in vars(Core).items() if callable(value) and not name.startswith("_")} - LIFECYCLE
    assert verbs == {method.python_name for method in METHODS if method.core}
    for method in METHODS:
        if method.core:
            hints = typing.get_type_hints(getattr(Core, method.python_name))
            assert hints["request"] is method.request
            returned = hints["return"]
            assert method.response in typing.get_args(returned) or returned is method.response


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[RunningCore]:
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False)
    try:
        yield core
    finally:
        await core.stop()
        await store.close()


async def test_the_servicer_serves_exactly_the_tables_methods(running: RunningCore) -> None:
    """Bytes that are no request reach each method's handler (400 INVALID_ARGUMENT); any other method of the
    service is UNIMPLEMENTED."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as opened:
        channel: Any = opened  # bytes in, bytes out: no (de)serializers
        for method in METHODS:
            if method.streaming:
                call: Any = channel.unary_stream(method.path)
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    async for _ in call(b"\xff"):
                        pass
            else:
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await channel.unary_unary(method.path)(b"\xff")
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, method.name
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await channel.unary_unary("/capstan.core.v1.CoreService/Nothing")(b"")
        assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED


CM = "configmaps"


def requests(name: str) -> list[tuple[str, Any]]:
    """One call of every method, in an order that leaves each a valid request (watch before the delete)."""
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}}
    return [
        ("Create", core_pb2.CreateRequest(path=path(CM, "default"), object=json_object(obj))),
        ("Get", core_pb2.GetRequest(path=path(CM, "default", name))),
        ("List", core_pb2.ListRequest(path=path(CM, "default"))),
        ("Update", core_pb2.UpdateRequest(path=path(CM, "default", name),
                                          object=json_object({**obj, "data": {"a": "2"}}))),
        ("Patch", core_pb2.PatchRequest(path=path(CM, "default", name), type=core_pb2.PATCH_TYPE_MERGE,
                                        patch=b'{"data":{"b":"3"}}')),
        ("Watch", core_pb2.WatchRequest(path=path(CM, "default"))),
        ("Delete", core_pb2.DeleteRequest(path=path(CM, "default", name))),
        ("DeleteCollection", core_pb2.DeleteCollectionRequest(path=path(CM, "default"))),
        ("Discover", core_pb2.DiscoverRequest()),
        ("RegisterDescriptors", core_pb2.RegisterDescriptorsRequest()),
        ("Access", core_pb2.AccessRequest(verb="get", path="/version")),
        ("IssuerDocument", core_pb2.IssuerDocumentRequest(path="/openid/v1/jwks")),
        ("Proxy", core_pb2.ProxyRequest(verb="get", path=core_pb2.ResourcePath(group="x.example", version="v1"),
                                        url_path="/apis/x.example/v1")),
        ("Metrics", core_pb2.MetricsRequest()),
    ]


def test_the_calls_below_cover_every_method() -> None:
    assert sorted(name for name, _ in requests("x")) == sorted(BY_NAME)


def _client(transport: str, running: RunningCore) -> CoreClient:
    address = f"127.0.0.1:{running.grpc_port}"
    if transport == "inprocess":
        return InProcessClient(running.guard)
    if transport == "grpc":
        return GrpcClient(address)
    return PoolClient([address])


@pytest.mark.parametrize("transport", ["inprocess", "grpc", "pool"])
@pytest.mark.parametrize("as_caller", [False, True])
async def test_each_method_reaches_the_core_through_each_transport(running: RunningCore, transport: str,
                                                                   as_caller: bool) -> None:
    """Each call by its typed attribute answers the method's response type (the issuer's documents: 404, this
    core issues no tokens)."""
    base = _client(transport, running)
    client = base.as_caller(Credentials()) if as_caller else base
    try:
        for name, request in requests(f"{transport}-{as_caller}".lower()):
            method = BY_NAME[name]
            attribute = getattr(client, method.python_name)
            if method.streaming:
                stream = attribute(request)
                first = await anext(stream)
                await stream.aclose()
                assert isinstance(first, method.response), name
                continue
            try:
                answer = await attribute(request)
            except CoreError as err:
                # the issuer's documents and a group version no APIService hands to a backend
                assert (name, err.status.code) in {("IssuerDocument", 404), ("Proxy", 404)}
                continue
            assert isinstance(answer, method.response), name
    finally:
        await base.close()


# ---- the guard authorizes each method as the table says


class Recording:
    """An authorizer that refuses everything and keeps what it was asked: the verb never runs."""

    def __init__(self) -> None:
        self.asked: list[Attributes] = []

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        self.asked.append(attributes)
        return Decision.NO_OPINION, "recorded"

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return AlwaysAllow().rules_for(user, namespace)


def _named(selector: str) -> core_pb2.ListRequest:
    request = core_pb2.ListRequest(path=path("pods", "ns"))
    request.options.fieldSelector = selector
    return request


def _watch(selector: str) -> core_pb2.WatchRequest:
    request = core_pb2.WatchRequest(path=path("pods", "ns"))
    request.options.fieldSelector = selector
    return request


_DEPLOYMENT = path("deployments", "ns", "d", group="apps")
# (method, request, what kube's RequestInfo makes of it: Attributes without the user)
AUTHORIZED: list[tuple[str, Any, Obj]] = [
    ("Create", core_pb2.CreateRequest(path=path("configmaps", "ns", "ignored")),
     {"verb": "create", "api_version": "v1", "resource": "configmaps", "namespace": "ns"}),
    ("Create", core_pb2.CreateRequest(path=path("pods", "ns", "p", subresource="binding")),
     {"verb": "create", "api_version": "v1", "resource": "pods", "subresource": "binding", "namespace": "ns",
      "name": "p"}),
    ("Get", core_pb2.GetRequest(path=_DEPLOYMENT),
     {"verb": "get", "api_group": "apps", "api_version": "v1", "resource": "deployments", "namespace": "ns",
      "name": "d"}),
    ("Get", core_pb2.GetRequest(path=path("pods", "ns", "p", subresource="exec"), connect_verb="create"),
     {"verb": "create", "api_version": "v1", "resource": "pods", "subresource": "exec", "namespace": "ns",
      "name": "p"}),
    ("List", _named(""), {"verb": "list", "api_version": "v1", "resource": "pods", "namespace": "ns"}),
    ("List", _named("status.phase=Running,metadata.name=x"),
     {"verb": "list", "api_version": "v1", "resource": "pods", "namespace": "ns", "name": "x"}),
    ("List", _named("metadata.name!=x"), {"verb": "list", "api_version": "v1", "resource": "pods", "namespace": "ns"}),
    ("Update", core_pb2.UpdateRequest(path=_DEPLOYMENT, object=json_object({})),
     {"verb": "update", "api_group": "apps", "api_version": "v1", "resource": "deployments", "namespace": "ns",
      "name": "d"}),
    ("Patch", core_pb2.PatchRequest(path=path("deployments", "ns", "d", group="apps", subresource="scale")),
     {"verb": "patch", "api_group": "apps", "api_version": "v1", "resource": "deployments", "subresource": "scale",
      "namespace": "ns", "name": "d"}),
    # kube's RequestInfoFactory puts /namespaces/{name}[/{subresource}] in the namespace it names
    ("Delete", core_pb2.DeleteRequest(path=path("namespaces", "", "n")),
     {"verb": "delete", "api_version": "v1", "resource": "namespaces", "namespace": "n", "name": "n"}),
    ("Update", core_pb2.UpdateRequest(path=path("namespaces", "", "n", subresource="finalize"), object=json_object({})),
     {"verb": "update", "api_version": "v1", "resource": "namespaces", "subresource": "finalize", "namespace": "n",
      "name": "n"}),
    ("Create", core_pb2.CreateRequest(path=path("namespaces", "", "ignored")),
     {"verb": "create", "api_version": "v1", "resource": "namespaces"}),
    ("DeleteCollection", core_pb2.DeleteCollectionRequest(path=path("pods", "ns")),
     {"verb": "deletecollection", "api_version": "v1", "resource": "pods", "namespace": "ns"}),
    ("Watch", _watch("metadata.name==w"),
     {"verb": "watch", "api_version": "v1", "resource": "pods", "namespace": "ns", "name": "w"}),
    ("Discover", core_pb2.DiscoverRequest(), {"verb": "get", "resource_request": False, "path": "/apis"}),
    ("RegisterDescriptors", core_pb2.RegisterDescriptorsRequest(),
     {"verb": "create", "api_group": "capstan.dev", "resource": "descriptors"}),
    ("Access", core_pb2.AccessRequest(verb="post", path="/metrics"),
     {"verb": "post", "resource_request": False, "path": "/metrics"}),
    ("IssuerDocument", core_pb2.IssuerDocumentRequest(path="/openid/v1/jwks"),
     {"verb": "get", "resource_request": False, "path": "/openid/v1/jwks"}),
    ("Proxy", core_pb2.ProxyRequest(verb="watch", path=path("flunders", "ns", "f", group="wardle.example",
                                                            version="v1alpha1"), url_path="/apis/..."),
     {"verb": "watch", "api_group": "wardle.example", "api_version": "v1alpha1", "resource": "flunders",
      "namespace": "ns", "name": "f"}),
    ("Proxy", core_pb2.ProxyRequest(verb="get", path=core_pb2.ResourcePath(group="wardle.example", version="v1"),
                                    url_path="/apis/wardle.example/v1"),
     {"verb": "get", "resource_request": False, "path": "/apis/wardle.example/v1"}),
    ("Metrics", core_pb2.MetricsRequest(), {"verb": "get", "resource_request": False, "path": "/metrics"}),
]


def test_the_authorization_cases_cover_every_method() -> None:
    assert {name for name, _, _ in AUTHORIZED} == set(BY_NAME)


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[Core]:
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    try:
        yield Core(store, Registry(BUILTIN))
    finally:
        await store.close()


@pytest.mark.parametrize("name,request_,expected", AUTHORIZED)
async def test_the_guard_authorizes_each_method_as_the_table_says(core: Core, name: str, request_: Any,
                                                                  expected: Obj) -> None:
    method = BY_NAME[name]
    authorizer = Recording()
    guard = GuardedCore(core, Constant(USER), authorizer)
    call = getattr(guard, method.python_name)
    with pytest.raises(ApiError) as refused:
        await call(request_, Credentials())
    assert refused.value.status.code == 403
    assert authorizer.asked == [Attributes(USER, **expected)]
    table = method.authorization(request_)
    assert Attributes(USER, **expected) == Attributes(USER, **table._asdict())


# ---- the pool's retry rule


def _update(version: str) -> core_pb2.UpdateRequest:
    metadata = {"name": "x", "resourceVersion": version} if version else {"name": "x"}
    return core_pb2.UpdateRequest(object=json_object({"metadata": metadata}))


def _dry(request: Any, field: str = "options") -> Any:
    getattr(request, field).dryRun.append("All")
    return request


def _delete(uid: str = "", version: str = "") -> core_pb2.DeleteRequest:
    request = core_pb2.DeleteRequest()
    if uid:
        request.options.preconditions.uid = uid
    if version:
        request.options.preconditions.resourceVersion = version
    return request


RETRIES: list[tuple[str, Any, bool]] = [
    ("Create", core_pb2.CreateRequest(), False),
    ("Create", _dry(core_pb2.CreateRequest()), True),
    ("Get", core_pb2.GetRequest(), True),
    ("List", core_pb2.ListRequest(), True),
    ("Update", _update(""), False),
    ("Update", _update("12"), True),
    ("Update", _dry(_update("")), True),
    ("Patch", core_pb2.PatchRequest(type=core_pb2.PATCH_TYPE_MERGE, patch=b'{"data":{}}'), False),
    ("Patch", core_pb2.PatchRequest(type=core_pb2.PATCH_TYPE_MERGE,
                                    patch=b'{"metadata":{"resourceVersion":"7"}}'), True),
    ("Patch", core_pb2.PatchRequest(type=core_pb2.PATCH_TYPE_JSON,
                                    patch=b'[{"op":"test","path":"/metadata/resourceVersion","value":"7"}]'), True),
    ("Patch", core_pb2.PatchRequest(type=core_pb2.PATCH_TYPE_APPLY,
                                    patch=b'{"metadata":{"resourceVersion":"7"}}'), False),
    ("Patch", _dry(core_pb2.PatchRequest(type=core_pb2.PATCH_TYPE_APPLY)), True),
    ("Delete", _delete(), False),
    ("Delete", _delete(uid="u"), True),
    ("Delete", _delete(version="3"), True),
    ("Delete", _dry(_delete()), True),
    ("DeleteCollection", core_pb2.DeleteCollectionRequest(), False),
    ("DeleteCollection", _dry(core_pb2.DeleteCollectionRequest(), "delete_options"), True),
    ("Watch", core_pb2.WatchRequest(), True),
    ("Discover", core_pb2.DiscoverRequest(), True),
    ("RegisterDescriptors", core_pb2.RegisterDescriptorsRequest(), True),
    ("Access", core_pb2.AccessRequest(), True),
    ("IssuerDocument", core_pb2.IssuerDocumentRequest(), True),
    ("Proxy", core_pb2.ProxyRequest(), True),
    ("Metrics", core_pb2.MetricsRequest(), True),
]


def test_the_retry_cases_cover_every_method_and_every_precondition() -> None:
    assert {name for name, _, _ in RETRIES} == set(BY_NAME)
    assert set(pool._PRECONDITIONS) == {method.name for method in METHODS if method.retry is Retry.PRECONDITIONED}


@pytest.mark.parametrize("name,request_,safe", RETRIES)
def test_the_pool_resends_what_the_table_allows(name: str, request_: Any, safe: bool) -> None:
    assert retry_safe(BY_NAME[name], request_) is safe


def test_a_call_outside_the_service_is_resent() -> None:
    assert retry_safe(None, None)
