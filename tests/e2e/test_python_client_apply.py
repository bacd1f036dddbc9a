"""The official Python client's PATCH and server-side apply against Capstan.

CoreV1Api picks a patch's Content-Type from its body (kubernetes.client.rest: a list is
application/json-patch+json, anything else application/strategic-merge-patch+json); merge patches
and apply configurations ask for theirs with `_content_type`. The dynamic client's
server_side_apply sends application/apply-patch+yaml. A write without field_manager is recorded for
the manager kube-apiserver derives from the User-Agent ("OpenAPI-Generator/<version>/python" ->
"OpenAPI-Generator", managerOrUserAgent). Expected answers are kube-apiserver 1.32's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException, V1ConfigMap, V1ObjectMeta
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ConflictError

from tests.e2e.conftest import Capstan, Obj, managers, stable

MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"
USER_AGENT_MANAGER = "OpenAPI-Generator"
SEED: Obj = {"metadata": {"name": "p", "labels": {"app": "web"}, "finalizers": ["example.com/a"]},
             "data": {"a": "1", "b": "2"}}
SEED_FIELDS = {"f:data": {".": {}, "f:a": {}, "f:b": {}},
               "f:metadata": {"f:finalizers": {".": {}, 'v:"example.com/a"': {}}, "f:labels": {".": {}, "f:app": {}}}}


@pytest.fixture(scope="module")
def configmaps(api: client.ApiClient, tmp_path_factory: pytest.TempPathFactory) -> Any:
    dynamic = DynamicClient(api, cache_file=str(tmp_path_factory.mktemp("dynamic") / "discovery.json"))  # type: ignore[no-untyped-call]
    return dynamic.resources.get(api_version="v1", kind="ConfigMap")


def seeded(core: client.CoreV1Api, ns: str) -> Any:
    seed = V1ConfigMap(metadata=V1ObjectMeta(**SEED["metadata"]), data=SEED["data"])
    return core.create_namespaced_config_map(ns, seed, field_manager="before")


def config_map(ns: str, data: dict[str, str], name: str = "s") -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data}


def status_of(err: ApiException) -> Obj:
    assert err.headers is not None and err.headers["Content-Type"] == "application/json"
    body: Obj = json.loads(err.body or "")
    return body


def _status(code: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    status: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
                   "reason": reason}
    if details is not None:
        status["details"] = details
    status["code"] = code
    return status


# -- patch_namespaced_config_map with each patch type ------------------------------------------------------------------


@dataclass(frozen=True)
class Patch:
    """A patch of the seed ConfigMap, how the client is told its type, and what kube-apiserver stores."""

    body: Any
    kwargs: dict[str, str]
    data: dict[str, str]
    finalizers: list[str]
    manager: str
    fields: Obj  # the patching manager's fieldsV1
    seed_fields: Obj  # what "before" keeps


KEPT_FINALIZERS: Obj = {"f:finalizers": {}, "f:labels": {".": {}, "f:app": {}}}  # the list, not its old member
PATCHES = [
    pytest.param(Patch([{"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/b"}], {},
                       {"a": "1", "b": "2"}, ["example.com/a", "example.com/b"], USER_AGENT_MANAGER,
                       {"f:metadata": {"f:finalizers": {'v:"example.com/b"': {}}}}, SEED_FIELDS),
                 id="list-is-a-json-patch"),
    pytest.param(Patch({"metadata": {"finalizers": ["example.com/b"]}}, {}, {"a": "1", "b": "2"},
                       ["example.com/b", "example.com/a"], USER_AGENT_MANAGER,
                       {"f:metadata": {"f:finalizers": {'v:"example.com/b"': {}}}}, SEED_FIELDS),
                 id="dict-is-a-strategic-merge-patch"),
    pytest.param(Patch({"metadata": {"finalizers": ["example.com/b"]}, "data": {"a": None}}, {"_content_type": MERGE},
                       {"b": "2"}, ["example.com/b"], USER_AGENT_MANAGER,
                       {"f:metadata": {"f:finalizers": {'v:"example.com/b"': {}}}},
                       {"f:data": {".": {}, "f:b": {}}, "f:metadata": KEPT_FINALIZERS}), id="merge-patch"),
    # kopf's finalizer update: replace the list only if it is still what was read.
    pytest.param(Patch([{"op": "test", "path": "/metadata/finalizers", "value": ["example.com/a"]},
                        {"op": "replace", "path": "/metadata/finalizers", "value": ["example.com/b"]}], {},
                       {"a": "1", "b": "2"}, ["example.com/b"], USER_AGENT_MANAGER,
                       {"f:metadata": {"f:finalizers": {'v:"example.com/b"': {}}}},
                       {"f:data": {".": {}, "f:a": {}, "f:b": {}}, "f:metadata": KEPT_FINALIZERS}),
                 id="json-patch-guarded-by-test"),
    pytest.param(Patch({"data": {"c": "3"}}, {"field_manager": "mine"}, {"a": "1", "b": "2", "c": "3"},
                       ["example.com/a"], "mine", {"f:data": {"f:c": {}}}, SEED_FIELDS), id="field-manager"),
]


@pytest.mark.parametrize("case", PATCHES)
def test_patch(core: client.CoreV1Api, capstan: Capstan, namespace: str, case: Patch) -> None:
    created = seeded(core, namespace)
    patched: Any = core.patch_namespaced_config_map("p", namespace, case.body, **case.kwargs)  # type: ignore[arg-type]
    assert (patched.data, patched.metadata.finalizers) == (case.data, case.finalizers)
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)

    code, stored = capstan.get(f"/api/v1/namespaces/{namespace}/configmaps/p")
    assert code == 200
    assert managers(stored) == {"before": ("Update", case.seed_fields), case.manager: ("Update", case.fields)}
    del stored["metadata"]["managedFields"]
    assert stable(stored) == {
        "kind": "ConfigMap", "apiVersion": "v1", "data": case.data,
        "metadata": {"name": "p", "namespace": namespace, "uid": "<uid>", "resourceVersion": "<rv>",
                     "creationTimestamp": "<time>", "labels": {"app": "web"}, "finalizers": case.finalizers}}
    assert stored["metadata"]["resourceVersion"] == patched.metadata.resource_version


def test_json_patch_whose_test_fails_is_422(core: client.CoreV1Api, namespace: str) -> None:
    """A stale kopf-style finalizer patch: the test op no longer holds, nothing is written."""
    seeded(core, namespace)
    guarded = [{"op": "test", "path": "/metadata/finalizers", "value": ["example.com/a"]},
               {"op": "replace", "path": "/metadata/finalizers", "value": []}]
    core.patch_namespaced_config_map("p", namespace, guarded)
    before: Any = core.read_namespaced_config_map("p", namespace)
    with pytest.raises(ApiException) as failed:
        core.patch_namespaced_config_map("p", namespace, guarded)
    assert failed.value.status == 422
    assert status_of(failed.value) == _status(
        422, "Invalid", "the server rejected our request due to an error in our request", {})
    after: Any = core.read_namespaced_config_map("p", namespace)
    assert after.metadata.resource_version == before.metadata.resource_version


def test_patch_that_changes_nothing_keeps_the_resource_version(core: client.CoreV1Api, namespace: str) -> None:
    created = seeded(core, namespace)
    unchanging: list[tuple[Any, dict[str, str]]] = [
        ({"data": {"a": "1"}}, {}), ({"metadata": {"labels": {"app": "web"}}}, {"_content_type": MERGE}),
        ([{"op": "test", "path": "/data/b", "value": "2"}], {})]
    for body, kwargs in unchanging:
        same: Any = core.patch_namespaced_config_map("p", namespace, body, **kwargs)  # type: ignore[arg-type]
        assert same.metadata.resource_version == created.metadata.resource_version
        assert [m.manager for m in same.metadata.managed_fields] == ["before"]  # nothing changed, nothing owned


# -- server-side apply -------------------------------------------------------------------------------------------------


def test_server_side_apply_with_the_dynamic_client(configmaps: Any, namespace: str) -> None:
    applied = configmaps.server_side_apply(body=config_map(namespace, {"k": "v1", "other": "o"}), name="s",
                                           namespace=namespace, field_manager="alpha")
    assert applied.data.to_dict() == {"k": "v1", "other": "o"}
    assert managers(applied.to_dict()) == {"alpha": ("Apply", {"f:data": {"f:k": {}, "f:other": {}}})}

    with pytest.raises(ConflictError) as conflict:
        configmaps.server_side_apply(body=config_map(namespace, {"k": "v2"}), name="s", namespace=namespace,
                                     field_manager="beta")
    assert isinstance(conflict.value, ApiException) and conflict.value.status == 409
    assert json.loads(conflict.value.body or "") == _status(
        409, "Conflict", 'Apply failed with 1 conflict: conflict with "alpha": .data.k',
        {"causes": [{"reason": "FieldManagerConflict", "message": 'conflict with "alpha"', "field": ".data.k"}]})
    assert configmaps.get(name="s", namespace=namespace).metadata.resourceVersion == applied.metadata.resourceVersion

    forced = configmaps.server_side_apply(body=config_map(namespace, {"k": "v2"}), name="s", namespace=namespace,
                                          field_manager="beta", force_conflicts=True)
    assert forced.data.to_dict() == {"k": "v2", "other": "o"}
    assert managers(forced.to_dict()) == {"alpha": ("Apply", {"f:data": {"f:other": {}}}),
                                          "beta": ("Apply", {"f:data": {"f:k": {}}})}

    # alpha applies again without the field it lost, and without "other": only it owned "other", so it goes.
    again = configmaps.server_side_apply(body=config_map(namespace, {}), name="s", namespace=namespace,
                                         field_manager="alpha")
    assert again.data.to_dict() == {"k": "v2"}
    assert managers(again.to_dict()) == {"alpha": ("Apply", {"f:data": {}}),
                                         "beta": ("Apply", {"f:data": {"f:k": {}}})}


def _apply(core: client.CoreV1Api, ns: str, body: Obj, name: str = "s", **kwargs: Any) -> tuple[Any, int]:
    data, code, _ = core.patch_namespaced_config_map_with_http_info(name, ns, body, _content_type=APPLY, **kwargs)
    return data, code


def test_server_side_apply_with_the_typed_client(core: client.CoreV1Api, namespace: str) -> None:
    created, code = _apply(core, namespace, config_map(namespace, {"k": "v1"}), field_manager="alpha")
    assert (code, created.data) == (201, {"k": "v1"})
    same, code = _apply(core, namespace, config_map(namespace, {"k": "v1"}), field_manager="alpha")
    assert (code, same.metadata.resource_version) == (200, created.metadata.resource_version)

    with pytest.raises(ApiException) as conflict:
        _apply(core, namespace, config_map(namespace, {"k": "v2"}), field_manager="beta")
    assert conflict.value.status == 409
    assert status_of(conflict.value)["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alpha"', "field": ".data.k"}]

    forced, code = _apply(core, namespace, config_map(namespace, {"k": "v2"}), field_manager="beta", force=True)
    assert (code, forced.data) == (200, {"k": "v2"})
    assert [(m.manager, m.operation, m.fields_v1) for m in forced.metadata.managed_fields] == [
        ("beta", "Apply", {"f:data": {"f:k": {}}})]  # alpha owned nothing else: its entry goes


def test_server_side_apply_dry_run_creates_nothing(core: client.CoreV1Api, namespace: str) -> None:
    shown, code = _apply(core, namespace, config_map(namespace, {"k": "v"}, name="dry"), name="dry",
                         field_manager="alpha", dry_run="All")
    assert (code, shown.data, shown.metadata.name) == (201, {"k": "v"}, "dry")
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("dry", namespace)
    assert missing.value.status == 404


def _two_conflicts(core: client.CoreV1Api, ns: str) -> Any:
    _apply(core, ns, config_map(ns, {"a": "1", "b": "1"}), field_manager="alpha")
    return _apply(core, ns, config_map(ns, {"a": "2", "b": "2"}), field_manager="beta")


def _conflict_with_an_updater(core: client.CoreV1Api, ns: str) -> Any:
    core.create_namespaced_config_map(ns, V1ConfigMap(metadata=V1ObjectMeta(name="s"), data={"a": "1"}),
                                      field_manager="creator")
    return _apply(core, ns, config_map(ns, {"a": "2"}), field_manager="beta")


PATCH_OPTIONS = 'PatchOptions.meta.k8s.io "" is invalid'
# (what, the call, the Status kube-apiserver answers)
APPLY_ERRORS: list[Any] = [
    pytest.param(lambda c, ns: _apply(c, ns, config_map(ns, {"k": "v"})), _status(
        422, "Invalid", f"{PATCH_OPTIONS}: fieldManager: Required value: is required for apply patch",
        {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{
            "reason": "FieldValueRequired", "message": "Required value: is required for apply patch",
            "field": "fieldManager"}]}), id="no-field-manager"),
    pytest.param(lambda c, ns: c.patch_namespaced_config_map("s", ns, {"data": {}}, _content_type=MERGE, force=True),
                 _status(422, "Invalid", f"{PATCH_OPTIONS}: force: Forbidden: may not be specified for non-apply patch",
                         {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{
                             "reason": "FieldValueForbidden", "message": "Forbidden: may not be specified for "
                             "non-apply patch", "field": "force"}]}), id="force-without-apply"),
    pytest.param(lambda c, ns: _apply(c, ns, {**config_map(ns, {}), "apiVersion": "v2"}, field_manager="m"), _status(
        400, "BadRequest", "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1"),
        id="wrong-api-version"),
    pytest.param(lambda c, ns: _apply(c, ns, {**config_map(ns, {}), "metadata": {
        "name": "s", "managedFields": [{"manager": "m"}]}}, field_manager="m"), _status(
        400, "BadRequest", "metadata.managedFields must be nil"), id="managed-fields-in-config"),
    pytest.param(_two_conflicts, _status(
        409, "Conflict", 'Apply failed with 2 conflicts: conflicts with "alpha":\n- .data.a\n- .data.b',
        {"causes": [{"reason": "FieldManagerConflict", "message": 'conflict with "alpha"', "field": ".data.a"},
                    {"reason": "FieldManagerConflict", "message": 'conflict with "alpha"', "field": ".data.b"}]}),
        id="two-conflicts"),
    pytest.param(_conflict_with_an_updater, _status(
        409, "Conflict", 'Apply failed with 1 conflict: conflict with "creator" using v1: .data.a',
        {"causes": [{"reason": "FieldManagerConflict", "message": 'conflict with "creator" using v1',
                     "field": ".data.a"}]}), id="conflict-with-an-update-manager"),
]


@pytest.mark.parametrize(("call", "status"), APPLY_ERRORS)
def test_apply_errors(core: client.CoreV1Api, namespace: str, call: Callable[[client.CoreV1Api, str], Any],
                      status: Obj) -> None:
    with pytest.raises(ApiException) as failed:
        call(core, namespace)
    assert failed.value.status == status["code"]
    assert status_of(failed.value) == status


# -- fieldManager on every write ---------------------------------------------------------------------------------------


def test_every_write_records_its_field_manager(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, V1ConfigMap(metadata=V1ObjectMeta(name="w"), data={"a": "1"}),
                                      field_manager="creator")
    current: Any = core.read_namespaced_config_map("w", namespace)
    current.data = {"a": "1", "b": "2"}
    core.replace_namespaced_config_map("w", namespace, current, field_manager="replacer")
    core.patch_namespaced_config_map("w", namespace, {"data": {"c": "3"}}, field_manager="patcher")
    core.patch_namespaced_config_map("w", namespace, {"data": {"d": "4"}})  # no manager: from the User-Agent
    written: Any = core.read_namespaced_config_map("w", namespace)
    assert written.data == {"a": "1", "b": "2", "c": "3", "d": "4"}
    assert sorted((m.manager, m.operation, json.dumps(m.fields_v1, sort_keys=True))
                  for m in written.metadata.managed_fields) == sorted([
        ("creator", "Update", json.dumps({"f:data": {".": {}, "f:a": {}}}, sort_keys=True)),
        ("replacer", "Update", json.dumps({"f:data": {"f:b": {}}}, sort_keys=True)),
        ("patcher", "Update", json.dumps({"f:data": {"f:c": {}}}, sort_keys=True)),
        (USER_AGENT_MANAGER, "Update", json.dumps({"f:data": {"f:d": {}}}, sort_keys=True)),
    ])
