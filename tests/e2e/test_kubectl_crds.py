"""CustomResourceDefinitions with the real kubectl against a real `capstan serve`: install a CRD, wait for it,
use its kind by plural, short name and category, explain it, apply to it server-side, and delete it.

The server is shared by the session, so every test works in its own API group with its own kind (CRDs are
cluster-scoped, and kubectl resolves a bare kind or short name across groups).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import yaml

from tests.e2e.conftest import Capstan, Kubectl, Obj

PINNED = ["1.28", "1.33"]  # the oldest kubectl reads OpenAPI v2 for explain, the newest v3


@dataclass(frozen=True)
class Names:
    """A test's own group and kind: group g1a2b3c4.example.com, kind Wa1b2c3 (plural wa1b2c3s, short wa1b2c3x)."""

    group: str
    token: str

    @property
    def kind(self) -> str:
        return "W" + self.token

    @property
    def singular(self) -> str:
        return "w" + self.token

    @property
    def plural(self) -> str:
        return self.singular + "s"

    @property
    def short(self) -> str:
        return self.singular + "x"

    @property
    def crd(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def resource(self) -> str:
        """What kubectl names one of its objects: wa1b2c3s.g1a2b3c4.example.com."""
        return f"{self.singular}.{self.group}"


def crd_yaml(n: Names) -> str:
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": n.crd},
        "spec": {
            "group": n.group, "scope": "Namespaced",
            "names": {"plural": n.plural, "singular": n.singular, "kind": n.kind, "shortNames": [n.short],
                      "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {
                    "type": "object", "description": "A test of custom resources.",
                    "properties": {
                        "spec": {"type": "object", "description": "What the widget should be.", "properties": {
                            "size": {"type": "integer", "description": "How big the widget is."},
                            "color": {"type": "string", "default": "red"},
                            "parts": {"type": "array", "x-kubernetes-list-type": "map",
                                      "x-kubernetes-list-map-keys": ["name"],
                                      "items": {"type": "object", "required": ["name"], "properties": {
                                          "name": {"type": "string"}, "count": {"type": "integer"}}}},
                        }},
                        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                    }}},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
            }],
        },
    })


def widget_yaml(n: Names, name: str, size: int | None, parts: list[Obj] | None = None) -> str:
    spec: Obj = {} if size is None else {"size": size}
    if parts is not None:
        spec["parts"] = parts
    return yaml.safe_dump({"apiVersion": f"{n.group}/v1", "kind": n.kind, "metadata": {"name": name}, "spec": spec})


@pytest.fixture
def n(kubectl: Kubectl) -> Iterator[Names]:
    """A fresh group and kind; its CRD (if a test made it) is deleted afterwards, so the session's other
    tests never see it in discovery."""
    names = Names(f"g{uuid.uuid4().hex[:8]}.example.com", uuid.uuid4().hex[:6])
    yield names
    kubectl("delete", "crd", names.crd, "--ignore-not-found", "--wait=false")


def install(kubectl: Kubectl, n: Names) -> None:
    ran = kubectl("apply", "-f", "-", input=crd_yaml(n))
    assert (ran.code, ran.out) == (0, f"customresourcedefinition.apiextensions.k8s.io/{n.crd} created\n"), ran.err
    ran = kubectl("wait", "--for=condition=Established", f"crd/{n.crd}", "--timeout=10s")
    assert (ran.code, ran.out) == (0, f"customresourcedefinition.apiextensions.k8s.io/{n.crd} condition met\n"), \
        ran.err


def test_install_use_and_delete_a_crd(kubectl: Kubectl, namespace: str, n: Names) -> None:
    install(kubectl, n)
    ran = kubectl("apply", "-n", namespace, "-f", "-", input=widget_yaml(n, "one", 3))
    assert (ran.code, ran.out) == (0, f"{n.resource}/one created\n"), ran.err

    for name in (n.plural, n.singular, n.short, f"{n.plural}.{n.group}", n.kind):
        ran = kubectl("get", name, "-n", namespace)
        assert ran.code == 0, ran.err
        header, row = ran.out.splitlines()
        assert header.split() == ["NAME", "SIZE", "COLOR", "AGE"]
        assert row.split()[:3] == ["one", "3", "red"]
        assert re.fullmatch(r"\d+s", row.split()[3])

    ran = kubectl("get", "all", "-n", namespace)
    assert ran.code == 0, ran.err
    assert f"{n.resource}/one" in ran.out

    got = kubectl.json("get", n.plural, "one", "-n", namespace, "-o", "json")
    assert (got["apiVersion"], got["kind"], got["spec"]) == (f"{n.group}/v1", n.kind, {"size": 3, "color": "red"})

    ran = kubectl("delete", "crd", n.crd)
    assert (ran.code, ran.out) == (0, f'customresourcedefinition.apiextensions.k8s.io "{n.crd}" deleted\n'), ran.err
    deadline = time.monotonic() + 10
    while True:
        ran = kubectl("get", n.plural, "-n", namespace)
        if ran.code != 0:
            break
        assert time.monotonic() < deadline, ran.out
        time.sleep(0.2)
    # kubectl's discovery cache may still name the resource; then the server's own 404 shows: Go's text 404 once
    # the group is gone (client-go names the request), go-restful's Status while the group is still served
    unable = f'Error from server (NotFound): Unable to list "{n.group}/v1, Resource={n.plural}": the server could ' \
             "not find the requested resource"
    assert ran.err in (f'error: the server doesn\'t have a resource type "{n.plural}"\n', unable + "\n",
                       f"{unable} (get {n.plural}.{n.group})\n"), ran.err


@pytest.mark.parametrize("version", [None, *PINNED])
def test_explain(kubectl: Kubectl, n: Names, version: str | None) -> None:
    install(kubectl, n)
    ran = kubectl("explain", n.plural, version=version)
    assert ran.code == 0, ran.err
    assert re.search(rf"KIND: +{n.kind}\n", ran.out), ran.out
    assert "A test of custom resources." in ran.out
    ran = kubectl("explain", f"{n.plural}.spec.size", version=version)
    assert ran.code == 0, ran.err
    assert "How big the widget is." in ran.out
    assert re.search(r"FIELD: +size", ran.out), ran.out


def test_apply_server_side_merges_map_lists(kubectl: Kubectl, namespace: str, n: Names) -> None:
    install(kubectl, n)
    first = widget_yaml(n, "ssa", 1, [{"name": "a", "count": 1}])
    ran = kubectl("apply", "--server-side", "--field-manager=alice", "-n", namespace, "-f", "-", input=first)
    assert (ran.code, ran.out) == (0, f"{n.resource}/ssa serverside-applied\n"), ran.err
    second = widget_yaml(n, "ssa", None, [{"name": "b", "count": 2}])
    ran = kubectl("apply", "--server-side", "--field-manager=bob", "-n", namespace, "-f", "-", input=second)
    assert ran.code == 0, ran.err
    got = kubectl.json("get", n.plural, "ssa", "-n", namespace, "-o", "json", "--show-managed-fields")
    assert got["spec"]["parts"] == [{"name": "a", "count": 1}, {"name": "b", "count": 2}]
    assert {e["manager"] for e in got["metadata"]["managedFields"]} == {"alice", "bob"}
    conflict = widget_yaml(n, "ssa", 5)
    ran = kubectl("apply", "--server-side", "--field-manager=bob", "-n", namespace, "-f", "-", input=conflict)
    assert ran.code != 0
    assert 'conflict with "alice"' in ran.err and ".spec.size" in ran.err, ran.err


def test_client_side_apply_and_patches_of_a_custom_resource(kubectl: Kubectl, namespace: str, n: Names) -> None:
    install(kubectl, n)
    assert kubectl("apply", "-n", namespace, "-f", "-", input=widget_yaml(n, "csa", 1)).code == 0
    ran = kubectl("apply", "-n", namespace, "-f", "-", input=widget_yaml(n, "csa", 2))
    assert (ran.code, ran.out) == (0, f"{n.resource}/csa configured\n"), ran.err
    ran = kubectl("patch", n.plural, "csa", "-n", namespace, "--type=merge", "-p", '{"spec":{"size":4}}')
    assert ran.code == 0, ran.err
    ran = kubectl("patch", n.plural, "csa", "-n", namespace, "-p", '{"spec":{"size":5}}')
    assert ran.code != 0  # a strategic merge patch: custom resources answer 415
    assert kubectl.json("get", n.plural, "csa", "-n", namespace, "-o", "json")["spec"]["size"] == 4


def test_crd_validation_errors_reach_kubectl(kubectl: Kubectl, n: Names) -> None:
    body = yaml.safe_load(crd_yaml(n))
    body["metadata"]["name"] = f"gadgets.{n.group}"
    ran = kubectl("apply", "-f", "-", input=yaml.safe_dump(body))
    assert ran.code != 0
    assert f'metadata.name: Invalid value: "gadgets.{n.group}": must be spec.names.plural+"."+spec.group' in ran.err


def test_status_of_the_crd(kubectl: Kubectl, capstan: Capstan, n: Names) -> None:
    install(kubectl, n)
    crd = kubectl.json("get", "crd", n.crd, "-o", "json")
    assert [(c["type"], c["status"]) for c in crd["status"]["conditions"]] == [
        ("NamesAccepted", "True"), ("Established", "True")]
    ran = kubectl("get", "crd", n.crd)
    assert ran.out.split()[:3] == ["NAME", "CREATED", "AT"]
    code, found = capstan.get(f"/apis/{n.group}/v1")
    assert code == 200 and [r["name"] for r in found["resources"]] == [n.plural, f"{n.plural}/status"]


def test_reapplying_a_changed_crd_changes_the_kind(kubectl: Kubectl, namespace: str, n: Names) -> None:
    install(kubectl, n)
    assert kubectl("apply", "-n", namespace, "-f", "-", input=widget_yaml(n, "re", 3)).code == 0
    body = yaml.safe_load(crd_yaml(n))
    version = body["spec"]["versions"][0]
    version["additionalPrinterColumns"].insert(0, {"name": "Parts", "type": "integer",
                                                   "jsonPath": ".spec.parts[0].count"})
    version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]["maximum"] = 5
    ran = kubectl("apply", "-f", "-", input=yaml.safe_dump(body))  # a strategic merge patch of the CRD
    assert (ran.code, ran.out) == (0, f"customresourcedefinition.apiextensions.k8s.io/{n.crd} configured\n"), ran.err
    deadline = time.monotonic() + 5
    while True:
        ran = kubectl("get", n.plural, "-n", namespace)
        if ran.out.split()[:2] == ["NAME", "PARTS"] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert ran.out.splitlines()[0].split() == ["NAME", "PARTS", "SIZE", "COLOR", "AGE"]
    ran = kubectl("apply", "-n", namespace, "-f", "-", input=widget_yaml(n, "big", 9))
    assert ran.code != 0
    assert "spec.size: Invalid value: 9: spec.size in body should be less than or equal to 5" in ran.err, ran.err
