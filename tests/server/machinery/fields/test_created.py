"""created.fields_v1 is updater.update's answer for a create, whatever the kind and the object."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.kinds import BUILTIN
from server.machinery.crdschema import structural
from server.machinery.fields import created, managers, updater
from server.machinery.fields.managers import Owner
from server.machinery.schema import JsonSchema
from server.objects import managed
from server.registry.resources import Registry, Resource, Subresource

REGISTRY = Registry(BUILTIN)
OWNER = Owner.of("kubectl-create", managers.UPDATE, "v1", "")
META = {"name": "x", "namespace": "default", "uid": "u", "creationTimestamp": None, "generation": 3,
        "labels": {"app": "web", "tier": ""}, "annotations": {"a/b": "c"}, "finalizers": ["f/one", "f/two"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "ou"}]}
CONTAINER = {"name": "web", "image": "nginx",
             "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}],
             "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "dup"}], "args": ["a", "b", "a"],
             "resources": {"limits": {"cpu": "1"}}}
POD_SPEC = {"containers": [CONTAINER, {"name": "side", "image": "busybox"}], "restartPolicy": "Always",
            "nodeSelector": {"disk": "ssd"}, "volumes": [{"name": "v", "emptyDir": {}}], "tolerations": []}
TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": POD_SPEC}


def resource(group: str, name: str) -> Resource:
    return REGISTRY.by_group_resource(group, name)[0]


CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("", "configmaps", {"metadata": {"name": "x"}, "data": {"a": "1", "b": ""}, "binaryData": {"c": "AA=="}}),
    ("", "configmaps", {"metadata": META, "data": {}, "immutable": False}),
    ("", "configmaps", {"metadata": {"name": "x", "managedFields": None}}),
    ("", "configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {}}}),
    ("", "secrets", {"metadata": {"name": "s"}, "type": "Opaque", "data": {"k": "dg=="}}),
    ("", "namespaces", {"metadata": {"name": "n"}, "spec": {"finalizers": ["kubernetes"]},
                        "status": {"phase": "Active"}}),
    ("", "namespaces", {"metadata": {"name": "n"}, "spec": {}, "status": {}}),
    ("", "pods", {"metadata": META, "spec": POD_SPEC, "status": {"phase": "Pending"}}),
    ("", "pods", {"metadata": {"name": "p"}, "spec": {"containers": []}}),
    ("", "services", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}],
                                                           "selector": {"app": "web"}, "type": "ClusterIP"}}),
    ("apps", "deployments", {"metadata": META, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                                                        "template": TEMPLATE, "strategy": {}}}),
    ("batch", "cronjobs", {"metadata": {"name": "c"}, "spec": {"schedule": "* * * * *", "jobTemplate": {
        "spec": {"template": TEMPLATE}}}}),
    ("rbac.authorization.k8s.io", "roles", {"metadata": {"name": "r"}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
    ("", "events", {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"},
                    "firstTimestamp": None, "reason": "Started", "count": 1}),
]


def general(res: Resource, new: Any) -> dict[str, Any]:
    zero = managed.zero(res)
    result = updater.update(zero, new, managed.shape(res), {}, OWNER, res.api_version,
                            managed.ignored(res, "", zero, new), "t")
    return result[OWNER].fields.to_fields_v1() if OWNER in result else {}


def fast(res: Resource, new: Any) -> dict[str, Any]:
    zero = managed.zero(res)
    return created.fields_v1(zero, new, managed.shape(res), managed.ignored(res, "", zero, new))


@pytest.mark.parametrize(("group", "name", "obj"), CASES)
def test_matches_the_general_update(group: str, name: str, obj: dict[str, Any]) -> None:
    res = resource(group, name)
    expected = general(res, obj)
    assert fast(res, obj) == expected
    assert list(fast(res, obj)) == list(expected)  # FieldsV1 keys in the same order


GADGET_STATUS = Subresource("status", "Gadget", ("get", "patch", "update"), ("status",))
UNTYPED = Resource(group="example.com", version="v1", resource="widgets", kind="Widget", singular="widget",
                   namespaced=True, schema=JsonSchema(None))
STRUCTURAL = Resource(group="example.com", version="v1", resource="gadgets", kind="Gadget", singular="gadget",
                      namespaced=True, subresources=(GADGET_STATUS,), schema=JsonSchema(structural.parse({
                          "type": "object", "properties": {
                              "spec": {"type": "object", "properties": {
                                  "items": {"type": "array", "x-kubernetes-list-type": "map",
                                            "x-kubernetes-list-map-keys": ["name"],
                                            "items": {"type": "object", "properties": {
                                                "name": {"type": "string"}, "size": {"type": "integer"}}}},
                                  "tags": {"type": "array", "x-kubernetes-list-type": "set",
                                           "items": {"type": "string"}},
                                  "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
                              "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}})))

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "a", "b"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "name", "size"]), inner,
                                                                  max_size=3),
    max_leaves=12)
ITEM = st.fixed_dictionaries({"name": st.sampled_from(["a", "b", "c"])}, optional={"size": st.integers(0, 3)})
GADGET_SPEC = st.fixed_dictionaries({}, optional={
    "items": st.lists(ITEM, max_size=3), "tags": st.lists(st.sampled_from(["x", "y"]), max_size=3),
    "labels": st.dictionaries(st.sampled_from(["p", "q"]), st.sampled_from(["", "v"]), max_size=2)})
METADATA = st.fixed_dictionaries({"name": st.just("x")}, optional={
    "labels": st.dictionaries(st.sampled_from(["p", "q"]), st.sampled_from(["", "v"]), max_size=2),
    "uid": st.just("u"), "finalizers": st.lists(st.sampled_from(["f", "g"]), max_size=2)})


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({"metadata": METADATA}, optional={"spec": JSON, "status": JSON, "other": JSON}))
def test_matches_for_untyped_objects(obj: dict[str, Any]) -> None:
    assert fast(UNTYPED, obj) == general(UNTYPED, obj)


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({"metadata": METADATA}, optional={"spec": GADGET_SPEC, "status": JSON}))
def test_matches_for_structural_objects(obj: dict[str, Any]) -> None:
    assert fast(STRUCTURAL, obj) == general(STRUCTURAL, obj)


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({"metadata": METADATA}, optional={
    "data": st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["", "1"]), max_size=2),
    "immutable": st.booleans()}))
def test_matches_for_config_maps(obj: dict[str, Any]) -> None:
    res = resource("", "configmaps")
    assert fast(res, obj) == general(res, obj)
