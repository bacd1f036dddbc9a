"""PATCH and apply through the real kubectl: the three patch types, server-side apply with a second
manager, client-side apply, diff, and the managers kubectl's verbs leave in metadata.managedFields.

Expected objects and texts are kube-apiserver 1.32's. Its field manager (k8s.io/apiserver
.../managedfields) records, for every write, the fields the writer added or changed under the writer's
name (kubectl-patch, kubectl-label, ...; a create's defaults included, the registry's own changes not),
takes from every other manager the fields the write removed, and keeps the entries in order: Apply
before Update, then by time, then by manager. The objects the tests create are written by a manager
named "before", which sorts ahead of every kubectl-* manager by name as well as by time.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Capstan, Kubectl, Obj, b64, dns_label, editor, managers, stable

BEFORE = "before"  # the manager that creates each test's objects
PATCHER = "kubectl-patch"
PATHS = {"configmap": "configmaps", "secret": "secrets", "namespace": "namespaces"}
KINDS = {"configmap": "ConfigMap", "secret": "Secret", "namespace": "Namespace"}
STALE = "the object has been modified; please apply your changes to the latest version and try again"
# kubectl's own advice after a server-side apply conflict (cmd/apply/apply.go), under the server's message.
CONFLICT_HINT = """\
Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the `--force-conflicts` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts
"""
def entry(manager: str, fields: Obj, operation: str = "Update") -> Obj:
    """A managedFields entry as `stable` leaves it."""
    return {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields, "manager": manager,
            "operation": operation, "time": "<time>"}


def get(kubectl: Kubectl, kind: str, name: str, ns: str) -> Obj:
    return kubectl.json("get", kind, name, "-n", ns, "-o", "json", "--show-managed-fields")


def manifest(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def config_map(name: str, ns: str, data: dict[str, str]) -> str:
    lines = "".join(f"  {k}: {json.dumps(v)}\n" for k, v in data.items())
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
            + (f"data:\n{lines}" if data else "data: {}\n"))


# -- kubectl patch -----------------------------------------------------------------------------------------------------

FINALIZERS = ["example.com/a"]
SEEDS: dict[str, Obj] = {  # what each kind's object is created with, by "before"
    "configmap": {"metadata": {"labels": {"app": "web"}, "finalizers": FINALIZERS}, "data": {"a": "1", "b": "2"}},
    "secret": {"data": {"a": b64("1")}},
    "namespace": {},
}
CM_META = {"labels": {"app": "web"}, "finalizers": FINALIZERS}
CM_META_FIELDS: Obj = {"f:finalizers": {".": {}, 'v:"example.com/a"': {}}, "f:labels": {".": {}, "f:app": {}}}
CM_BEFORE: Obj = {"f:data": {".": {}, "f:a": {}, "f:b": {}}, "f:metadata": CM_META_FIELDS}
SECRET_BEFORE: Obj = {"f:data": {".": {}, "f:a": {}}, "f:type": {}}  # type is a default, set when decoding
NAME_LABEL = "kubernetes.io/metadata.name"
NS_BEFORE: Obj = {"f:metadata": {"f:labels": {".": {}, f"f:{NAME_LABEL}": {}}}}  # the label: a default, decoding


@dataclass(frozen=True)
class Patched:
    """One `kubectl patch` of a freshly seeded object and the object kube-apiserver answers."""

    kind: str
    args: tuple[str, ...]  # --type and -p
    body: Obj  # the answer's fields besides apiVersion, kind and metadata
    meta: Obj  # its metadata besides name, namespace, uid, resourceVersion, creationTimestamp, managedFields
    before: Obj  # the fieldsV1 "before" keeps
    patcher: Obj | None  # kubectl-patch's fieldsV1 (None: it changed nothing it could own)


PATCHES = [
    pytest.param(Patched("configmap", ("-p", '{"data":{"b":"3","c":"4"}}'),
                         {"data": {"a": "1", "b": "3", "c": "4"}}, CM_META,
                         {"f:data": {".": {}, "f:a": {}}, "f:metadata": CM_META_FIELDS},
                         {"f:data": {"f:b": {}, "f:c": {}}}), id="strategic-merges-maps"),
    pytest.param(Patched("configmap", ("-p", '{"data":{"a":null},"metadata":{"labels":{"tier":"x"}}}'),
                         {"data": {"b": "2"}}, {**CM_META, "labels": {"app": "web", "tier": "x"}},
                         {"f:data": {".": {}, "f:b": {}}, "f:metadata": CM_META_FIELDS},
                         {"f:metadata": {"f:labels": {"f:tier": {}}}}), id="strategic-null-deletes"),
    pytest.param(Patched("configmap", ("-p", '{"metadata":{"finalizers":["example.com/b"]}}'),
                         {"data": {"a": "1", "b": "2"}}, {**CM_META, "finalizers": ["example.com/b", "example.com/a"]},
                         CM_BEFORE, {"f:metadata": {"f:finalizers": {'v:"example.com/b"': {}}}}),
                 id="strategic-finalizers-merge-as-a-set"),
    pytest.param(Patched("configmap", ("-p", '{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/a"]}}'),
                         {"data": {"a": "1", "b": "2"}}, {"labels": {"app": "web"}},
                         {"f:data": {".": {}, "f:a": {}, "f:b": {}},
                          "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}, None),
                 id="strategic-delete-from-primitive-list"),
    pytest.param(Patched("configmap", ("-p", '{"data":{"$patch":"replace","z":"9"}}'),
                         {"data": {"z": "9"}}, CM_META, {"f:data": {}, "f:metadata": CM_META_FIELDS},
                         {"f:data": {"f:z": {}}}), id="strategic-patch-replace"),
    pytest.param(Patched("configmap", ("--type=merge", "-p",
                                       '{"data":{"a":null},"metadata":{"finalizers":["example.com/b"]}}'),
                         {"data": {"b": "2"}}, {**CM_META, "finalizers": ["example.com/b"]},
                         {"f:data": {".": {}, "f:b": {}},
                          "f:metadata": {"f:finalizers": {}, "f:labels": {".": {}, "f:app": {}}}},
                         {"f:metadata": {"f:finalizers": {'v:"example.com/b"': {}}}}),
                 id="merge-replaces-lists-null-deletes"),
    pytest.param(Patched("configmap", ("--type=json", "-p", json.dumps([
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "move", "from": "/data/a", "path": "/data/c"},
        {"op": "copy", "from": "/data/b", "path": "/data/d"},
        {"op": "replace", "path": "/metadata/labels/app", "value": "api"},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/z"},
    ])), {"data": {"b": "2", "c": "1", "d": "2"}},
        {"labels": {"app": "api"}, "finalizers": ["example.com/a", "example.com/z"]},
        {"f:data": {".": {}, "f:b": {}},
         "f:metadata": {"f:finalizers": {".": {}, 'v:"example.com/a"': {}}, "f:labels": {}}},
        {"f:data": {"f:c": {}, "f:d": {}},
         "f:metadata": {"f:finalizers": {'v:"example.com/z"': {}}, "f:labels": {"f:app": {}}}}),
        id="json-test-move-copy-replace-add"),
    pytest.param(Patched("configmap", ("--type=json", "-p", '[{"op":"remove","path":"/data"}]'),
                         {}, CM_META, {"f:metadata": CM_META_FIELDS}, None), id="json-remove"),
    pytest.param(Patched("secret", ("-p", '{"stringData":{"k":"v"}}'),
                         {"data": {"a": b64("1"), "k": b64("v")}, "type": "Opaque"}, {}, SECRET_BEFORE,
                         {"f:data": {"f:k": {}}}), id="secret-strategic-string-data"),
    pytest.param(Patched("secret", ("--type=merge", "-p", json.dumps({"data": {"a": b64("2")}})),
                         {"data": {"a": b64("2")}, "type": "Opaque"}, {}, {"f:data": {}, "f:type": {}},
                         {"f:data": {"f:a": {}}}), id="secret-merge"),
    pytest.param(Patched("namespace", ("--type=merge", "-p", '{"metadata":{"labels":{"team":"a"}}}'),
                         {"spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}},
                         {"labels": {NAME_LABEL: "<name>", "team": "a"}}, NS_BEFORE,
                         {"f:metadata": {"f:labels": {"f:team": {}}}}),
                 id="namespace-merge"),
]


def seed(capstan: Capstan, kind: str, ns: str, name: str) -> Obj:
    """Create the kind's seed object as manager "before"; a Namespace is named `name`, the others live in ns."""
    where = "/api/v1" if kind == "namespace" else f"/api/v1/namespaces/{ns}"
    body = {**SEEDS[kind], "metadata": {"name": name, **SEEDS[kind].get("metadata", {})}}
    return capstan.create(f"{where}/{PATHS[kind]}?fieldManager={BEFORE}", body)


def fill(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        return {k: fill(v, name) for k, v in value.items()}
    return name if value == "<name>" else value


@pytest.mark.parametrize("case", PATCHES)
def test_patch_answers_the_patched_object(kubectl: Kubectl, capstan: Capstan, namespace: str,
                                          request: pytest.FixtureRequest, case: Patched) -> None:
    name = dns_label(request.node.name) if case.kind == "namespace" else "p"
    created = seed(capstan, case.kind, namespace, name)
    where = [] if case.kind == "namespace" else ["-n", namespace]

    patched = kubectl.json("patch", case.kind, name, *where, *case.args, "-o", "json", "--show-managed-fields")

    entries = [entry(BEFORE, case.before), *([entry(PATCHER, case.patcher)] if case.patcher else [])]
    metadata = {"name": name, **({} if case.kind == "namespace" else {"namespace": namespace}), "uid": "<uid>",
                "resourceVersion": "<rv>", "creationTimestamp": "<time>", **fill(case.meta, name),
                "managedFields": entries}
    assert stable(patched) == {"apiVersion": "v1", "kind": KINDS[case.kind], "metadata": metadata, **case.body}
    assert patched["metadata"]["uid"] == created["metadata"]["uid"]
    assert int(patched["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert get(kubectl, case.kind, name, namespace) == patched  # what was answered is what was stored


NS_CONDITION = {"type": "NamespaceDeletionContentFailure", "status": "False", "reason": "ContentDeleted",
                "message": "ok"}


@pytest.mark.parametrize("args", [
    pytest.param(("-p", json.dumps({"metadata": {"labels": {"team": "a"}}, "spec": {"finalizers": []},
                                    "status": {"conditions": [NS_CONDITION]}})), id="strategic"),
    pytest.param(("--type=merge", "-p", json.dumps({"metadata": {"labels": {"team": "a"}}, "spec": {"finalizers": []},
                                                    "status": {"conditions": [NS_CONDITION]}})), id="merge"),
    pytest.param(("--type=json", "-p", json.dumps([
        {"op": "add", "path": "/metadata/labels/team", "value": "a"},
        {"op": "replace", "path": "/spec/finalizers", "value": []},
        {"op": "add", "path": "/status/conditions", "value": [NS_CONDITION]}])), id="json"),
])
def test_status_patch_keeps_labels(kubectl: Kubectl, capstan: Capstan, request: pytest.FixtureRequest,
                                   args: tuple[str, ...]) -> None:
    # namespaceStatusStrategy resets spec only: the label stays, owned by kubectl-patch through "status".
    name = dns_label(request.node.name)
    seed(capstan, "namespace", "", name)
    patched = kubectl.json("patch", "namespace", name, "--subresource=status", *args, "-o", "json",
                           "--show-managed-fields")
    assert patched["metadata"]["labels"] == {NAME_LABEL: name, "team": "a"}
    assert patched["spec"] == {"finalizers": ["kubernetes"]}
    assert [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in patched["status"]["conditions"]] == [
        NS_CONDITION]
    (mine,) = [e for e in patched["metadata"]["managedFields"] if e["manager"] == PATCHER]
    assert mine["subresource"] == "status"
    assert mine["fieldsV1"]["f:metadata"] == {"f:labels": {"f:team": {}}}
    assert get(kubectl, "namespace", name, "") == patched


# (kind, kubectl patch arguments): each changes nothing, so kube-apiserver writes nothing and kubectl,
# finding the answer equal to what it read, says so.
NO_CHANGE = [
    pytest.param("configmap", ("-p", '{"data":{"a":"1"}}'), id="strategic-same-value"),
    pytest.param("configmap", ("-p", '{"metadata":{"finalizers":["example.com/a"]}}'), id="strategic-set-member"),
    pytest.param("configmap", ("--type=merge", "-p", '{"metadata":{"labels":{"app":"web"}}}'), id="merge"),
    pytest.param("configmap", ("--type=json", "-p", '[{"op":"test","path":"/data/a","value":"1"},'
                               '{"op":"replace","path":"/data/b","value":"2"}]'), id="json"),
    pytest.param("secret", ("-p", '{"stringData":{"a":"1"}}'), id="secret-string-data-equal-to-data"),
    # The namespace strategy keeps status (only /status changes it), and status is its reset field. (A
    # patch of spec.finalizers is no such case: the strategy keeps them too, but they are not reset
    # fields, so the patcher gains their ownership and the object changes, as in kube-apiserver.)
    pytest.param("namespace", ("--type=merge", "-p", '{"status":{"phase":"Terminating"}}'), id="namespace-status"),
]


@pytest.mark.parametrize(("kind", "args"), NO_CHANGE)
def test_patch_that_changes_nothing(kubectl: Kubectl, capstan: Capstan, namespace: str,
                                    request: pytest.FixtureRequest, kind: str, args: tuple[str, ...]) -> None:
    name = dns_label(request.node.name) if kind == "namespace" else "p"
    seed(capstan, kind, namespace, name)
    where = [] if kind == "namespace" else ["-n", namespace]
    before = get(kubectl, kind, name, namespace)
    assert kubectl("patch", kind, name, *where, *args) == (0, f"{kind}/{name} patched (no change)\n", "")
    assert get(kubectl, kind, name, namespace) == before  # same resourceVersion, same managedFields


# (kubectl patch arguments for configmap "p", what kubectl prints on stderr); each exits 1 and changes nothing.
# A JSON patch that fails is kube-apiserver's NewGenericServerResponse(422) of an expected response: reason
# Invalid, empty details, so kubectl prints the generic message after "The request is invalid: ".
REJECTED = "the server rejected our request due to an error in our request"
PATCH_ERRORS = [
    pytest.param(("--type=json", "-p", '[{"op":"test","path":"/data/a","value":"2"},'
                  '{"op":"replace","path":"/data/a","value":"3"}]'),
                 f"The request is invalid: {REJECTED}\n", id="json-test-fails"),
    pytest.param(("--type=json", "-p", '[{"op":"test","path":"/data/zz","value":"1"}]'),
                 f"The request is invalid: {REJECTED}\n", id="json-test-absent-key"),
    pytest.param(("--type=json", "-p", '[{"op":"test","path":"/spec/x","value":"1"}]'),
                 f"The request is invalid: {REJECTED}\n", id="json-test-absent-parent"),
    pytest.param(("--type=merge", "-p", '{"metadata":{"resourceVersion":"1"},"data":{"a":"9"}}'),
                 f'Error from server (Conflict): Operation cannot be fulfilled on configmaps "p": {STALE}\n',
                 id="merge-stale-resource-version"),
    pytest.param(("-p", '{"metadata":{"resourceVersion":"1"},"data":{"a":"9"}}'),
                 f'Error from server (Conflict): Operation cannot be fulfilled on configmaps "p": {STALE}\n',
                 id="strategic-stale-resource-version"),
    pytest.param(("-p", '{"metadata":{"name":"other"}}'),
                 "Error from server (BadRequest): the name of the object (other) does not match the name on the URL "
                 "(p)\n", id="strategic-rename"),
    pytest.param(("--type=merge", "-p", '{"metadata":{"namespace":"default"}}'),
                 "Error from server (BadRequest): the namespace of the object (default) does not match the namespace "
                 "on the request ({ns})\n", id="merge-move"),
    pytest.param(("--type=json", "-p", '[{"op":"remove","path":"/metadata/name"}]'),
                 "Error from server (BadRequest): the name of the object (p based on URL) was undeterminable: name "
                 "must be provided\n", id="json-remove-name"),
    pytest.param(("-p", '{"data":{"bad key":"x"}}'),
                 'The ConfigMap "p" is invalid: data[bad key]: Invalid value: "bad key": a valid config key must '
                 "consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
                 "'key-name', regex used for validation is '[-._a-zA-Z0-9]+')\n", id="invalid-result"),
]


@pytest.mark.parametrize(("args", "err"), PATCH_ERRORS)
def test_patch_errors(kubectl: Kubectl, capstan: Capstan, namespace: str, args: tuple[str, ...], err: str) -> None:
    seed(capstan, "configmap", namespace, "p")
    before = get(kubectl, "configmap", "p", namespace)
    assert kubectl("patch", "configmap", "p", "-n", namespace, *args) == (1, "", err.replace("{ns}", namespace))
    assert get(kubectl, "configmap", "p", namespace) == before


def test_failed_json_patch_test_is_422_invalid(capstan: Capstan, namespace: str) -> None:
    """The Status behind kubectl's "The request is invalid" (kopf guards finalizer patches with a test op)."""
    seed(capstan, "configmap", namespace, "p")
    answer = capstan.request("PATCH", f"/api/v1/namespaces/{namespace}/configmaps/p",
                             [{"op": "test", "path": "/data/a", "value": "2"}],
                             content_type="application/json-patch+json")
    assert answer == (422, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": REJECTED, "reason": "Invalid", "details": {}, "code": 422})


# -- kubectl apply --server-side ---------------------------------------------------------------------------------------


def test_server_side_apply_conflict_then_force(kubectl: Kubectl, namespace: str, tmp_path: Path) -> None:
    mine = manifest(tmp_path, "mine.yaml", config_map("s", namespace, {"k": "v1", "other": "o"}))
    assert kubectl("apply", "--server-side", "-f", mine) == (0, "configmap/s serverside-applied\n", "")
    created = get(kubectl, "configmap", "s", namespace)
    assert stable(created) == {
        "apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v1", "other": "o"},
        "metadata": {"name": "s", "namespace": namespace, "uid": "<uid>", "resourceVersion": "<rv>",
                     "creationTimestamp": "<time>",
                     "managedFields": [entry("kubectl", {"f:data": {"f:k": {}, "f:other": {}}}, "Apply")]}}

    manifest(tmp_path, "mine.yaml", config_map("s", namespace, {"k": "v2", "other": "o"}))
    assert kubectl("apply", "--server-side", "-f", mine) == (0, "configmap/s serverside-applied\n", "")
    updated = get(kubectl, "configmap", "s", namespace)
    assert updated["data"] == {"k": "v2", "other": "o"}
    assert managers(updated) == {"kubectl": ("Apply", {"f:data": {"f:k": {}, "f:other": {}}})}
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]

    theirs = manifest(tmp_path, "theirs.yaml", config_map("s", namespace, {"k": "v3"}))
    refused = kubectl("apply", "--server-side", "--field-manager=alpha", "-f", theirs)
    assert refused == (1, "", 'error: Apply failed with 1 conflict: conflict with "kubectl": .data.k\n' + CONFLICT_HINT)
    assert get(kubectl, "configmap", "s", namespace) == updated

    forced = kubectl("apply", "--server-side", "--field-manager=alpha", "--force-conflicts", "-f", theirs)
    assert forced == (0, "configmap/s serverside-applied\n", "")
    taken = get(kubectl, "configmap", "s", namespace)
    assert taken["data"] == {"k": "v3", "other": "o"}
    assert managers(taken) == {"alpha": ("Apply", {"f:data": {"f:k": {}}}),
                               "kubectl": ("Apply", {"f:data": {"f:other": {}}})}

    # Now "kubectl" conflicts in turn, naming the new owner.
    refused = kubectl("apply", "--server-side", "-f", mine)
    assert refused == (1, "", 'error: Apply failed with 1 conflict: conflict with "alpha": .data.k\n' + CONFLICT_HINT)


def _co_apply(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    path = manifest(tmp_path, "alpha.yaml", config_map("r", ns, {"drop": "2"}))
    assert kubectl("apply", "--server-side", "--field-manager=alpha", "-f", path).code == 0


def _patch_value(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    assert kubectl("patch", "configmap", "r", "-n", ns, "-p", '{"data":{"drop":"3"}}').code == 0


def _label(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    assert kubectl("label", "configmap", "r", "-n", ns, "team=x").code == 0


# (what another manager does first, the object's data once "kubectl" applies {keep} without "drop",
# the managers left with their fields)
DROPS = [
    pytest.param(None, {"keep": "1"}, {"kubectl": ("Apply", {"f:data": {"f:keep": {}}})}, id="nobody-else-owns-it"),
    pytest.param(_co_apply, {"keep": "1", "drop": "2"}, {
        "alpha": ("Apply", {"f:data": {"f:drop": {}}}),
        "kubectl": ("Apply", {"f:data": {"f:keep": {}}})}, id="another-applier-co-owns-it"),
    pytest.param(_patch_value, {"keep": "1", "drop": "3"}, {
        "kubectl": ("Apply", {"f:data": {"f:keep": {}}}),
        "kubectl-patch": ("Update", {"f:data": {"f:drop": {}}})}, id="an-update-took-it"),
    pytest.param(_label, {"keep": "1"}, {
        "kubectl": ("Apply", {"f:data": {"f:keep": {}}}),
        "kubectl-label": ("Update", {"f:metadata": {"f:labels": {".": {}, "f:team": {}}}})},
                 id="another-manager-owns-other-fields"),
]


@pytest.mark.parametrize(("other", "data", "owners"), DROPS)
def test_server_side_apply_removes_a_dropped_field_only_it_owns(kubectl: Kubectl, namespace: str, tmp_path: Path,
                                                                other: Any, data: dict[str, str],
                                                                owners: dict[str, Any]) -> None:
    path = manifest(tmp_path, "r.yaml", config_map("r", namespace, {"keep": "1", "drop": "2"}))
    assert kubectl("apply", "--server-side", "-f", path) == (0, "configmap/r serverside-applied\n", "")
    if other is not None:
        other(kubectl, namespace, tmp_path)
    manifest(tmp_path, "r.yaml", config_map("r", namespace, {"keep": "1"}))
    assert kubectl("apply", "--server-side", "-f", path) == (0, "configmap/r serverside-applied\n", "")
    applied = get(kubectl, "configmap", "r", namespace)
    assert applied["data"] == data
    assert managers(applied) == owners


def test_server_side_apply_of_an_empty_map_owns_the_map(kubectl: Kubectl, namespace: str, tmp_path: Path) -> None:
    path = manifest(tmp_path, "e.yaml", config_map("e", namespace, {"k": "v"}))
    assert kubectl("apply", "--server-side", "-f", path).code == 0
    manifest(tmp_path, "e.yaml", config_map("e", namespace, {}))
    assert kubectl("apply", "--server-side", "-f", path).code == 0
    applied = get(kubectl, "configmap", "e", namespace)
    assert "data" not in applied  # an empty map, which a ConfigMap's JSON leaves out (omitempty)
    assert managers(applied) == {"kubectl": ("Apply", {"f:data": {}})}


# -- kubectl apply (client-side) and diff ------------------------------------------------------------------------------

CSA = "kubectl-client-side-apply"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _changed_lines(diff: str) -> list[str]:
    return [line for line in diff.splitlines() if re.match(r"[-+](?![-+]{2} )", line)]


def test_client_side_apply_twice_then_diff(kubectl: Kubectl, namespace: str, tmp_path: Path) -> None:
    path = manifest(tmp_path, "c.yaml", config_map("c", namespace, {"k": "v1", "drop": "x"}))
    assert kubectl("apply", "-f", path) == (0, "configmap/c created\n", "")
    manifest(tmp_path, "c.yaml", config_map("c", namespace, {"k": "v2"}))
    assert kubectl("apply", "-f", path) == (0, "configmap/c configured\n", "")

    applied = get(kubectl, "configmap", "c", namespace)
    assert applied["data"] == {"k": "v2"}  # the three-way merge deletes what the last configuration had
    assert json.loads(applied["metadata"]["annotations"][LAST_APPLIED]) == {
        "apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v2"},
        "metadata": {"annotations": {}, "name": "c", "namespace": namespace}}
    assert managers(applied) == {CSA: ("Update", {
        "f:data": {".": {}, "f:k": {}},
        "f:metadata": {"f:annotations": {".": {}, f"f:{LAST_APPLIED}": {}}}})}

    assert kubectl("diff", "-f", path) == (0, "", "")
    manifest(tmp_path, "c.yaml", config_map("c", namespace, {"k": "v3"}))
    diffed = kubectl("diff", "-f", path)
    assert (diffed.code, diffed.err) == (1, "")
    assert _changed_lines(diffed.out) == ["-  k: v2", "+  k: v3"]  # diff leaves last-applied as it is
    assert get(kubectl, "configmap", "c", namespace) == applied  # diff is a dry run


def test_server_side_diff(kubectl: Kubectl, namespace: str, tmp_path: Path) -> None:
    path = manifest(tmp_path, "d.yaml", config_map("d", namespace, {"k": "v1"}))
    assert kubectl("apply", "--server-side", "-f", path).code == 0
    applied = get(kubectl, "configmap", "d", namespace)

    assert kubectl("diff", "--server-side", "-f", path) == (0, "", "")
    manifest(tmp_path, "d.yaml", config_map("d", namespace, {"k": "v2", "new": "fresh"}))
    diffed = kubectl("diff", "--server-side", "-f", path)
    assert (diffed.code, diffed.err) == (1, "")
    assert _changed_lines(diffed.out) == ["-  k: v1", "+  k: v2", "+  new: fresh"]
    assert get(kubectl, "configmap", "d", namespace) == applied


@pytest.mark.parametrize("args", [
    pytest.param(("apply", "--server-side"), id="apply"),
    pytest.param(("diff", "--server-side"), id="diff"),
])
def test_server_side_apply_takes_over_from_client_side_apply(kubectl: Kubectl, namespace: str, tmp_path: Path,
                                                            args: tuple[str, ...]) -> None:
    """https://kubernetes.io/docs/reference/using-api/server-side-apply/#upgrading-from-client-side-apply-to-server-side-apply:
    "field management of the object transfers from client-side apply to kubectl server-side apply, without
    encountering conflicts" (kube-apiserver's lastAppliedManager forces what last-applied still matches)."""
    path = manifest(tmp_path, "u.yaml", config_map("u", namespace, {"k": "v1"}))
    assert kubectl("apply", "-f", path).code == 0
    manifest(tmp_path, "u.yaml", config_map("u", namespace, {"k": "v2"}))
    ran = kubectl(*args, "-f", path)
    assert ran.code == (0 if args[0] == "apply" else 1), ran.err
    if args[0] == "apply":
        assert get(kubectl, "configmap", "u", namespace)["data"] == {"k": "v2"}
    else:  # and kubectl's last-applied-configuration follows the server-side apply (lastAppliedUpdater)
        changed = _changed_lines(ran.out)
        assert [line for line in changed if '{"apiVersion"' not in line] == ["-  k: v1", "+  k: v2"]
        assert [line.split('"data":')[1][:12] for line in changed if '{"apiVersion"' in line] == [
            '{"k":"v1"},"', '{"k":"v2"},"']


# -- the managers kubectl's verbs record -------------------------------------------------------------------------------

# (the command, given the ConfigMap "m" {a: "1"} made by `kubectl create configmap`; the object it writes;
# the manager it writes as, with its fieldsV1). {new} is a fresh namespace's name.
MANAGERS = [
    pytest.param(["create", "configmap", "n", "--from-literal=a=1"], "configmap/n", "kubectl-create",
                 {"f:data": {".": {}, "f:a": {}}}, id="create-configmap"),
    pytest.param(["create", "secret", "generic", "n", "--from-literal=a=1"], "secret/n", "kubectl-create",
                 {"f:data": {".": {}, "f:a": {}}, "f:type": {}}, id="create-secret"),
    pytest.param(["create", "namespace", "{new}"], "namespace/{new}", "kubectl-create", NS_BEFORE,
                 id="create-namespace"),
    pytest.param(["label", "configmap", "m", "app=x"], "configmap/m", "kubectl-label",
                 {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}, id="label"),
    pytest.param(["annotate", "configmap", "m", "note=hi"], "configmap/m", "kubectl-annotate",
                 {"f:metadata": {"f:annotations": {".": {}, "f:note": {}}}}, id="annotate"),
    pytest.param(["label", "configmap", "m", "app=x", "--field-manager=mine"], "configmap/m", "mine",
                 {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}, id="label-field-manager"),
    pytest.param(["patch", "configmap", "m", "-p", '{"data":{"b":"2"}}'], "configmap/m", "kubectl-patch",
                 {"f:data": {"f:b": {}}}, id="patch"),
    pytest.param(["edit", "configmap", "m"], "configmap/m", "kubectl-edit", {"f:data": {"f:a": {}}}, id="edit"),
]


@pytest.mark.parametrize(("args", "written", "manager", "fields"), MANAGERS)
def test_kubectl_verbs_record_their_manager(kubectl: Kubectl, namespace: str, tmp_path: Path, args: list[str],
                                            written: str, manager: str, fields: Obj) -> None:
    assert kubectl("create", "configmap", "m", "--from-literal=a=1", "-n", namespace).code == 0
    env = editor(tmp_path, "sed -i 's/^  a: \"1\"$/  a: \"2\"/' \"$1\"") if args[0] == "edit" else None
    new = dns_label("created")
    ran = kubectl(*[a.replace("{new}", new) for a in args], "-n", namespace, env=env)
    kind, name = written.replace("{new}", new).split("/")
    assert (ran.code, ran.err) == (0, ""), ran.err
    assert ran.out.startswith(f"{kind}/{name} "), ran.out
    obj = get(kubectl, kind, name, namespace)
    assert managers(obj)[manager] == ("Update", fields)
    if name == "m":  # the creator keeps what nobody took from it
        create: Obj = {"f:data": {} if manager == "kubectl-edit" else {".": {}, "f:a": {}}}
        assert managers(obj)["kubectl-create"] == ("Update", create)
