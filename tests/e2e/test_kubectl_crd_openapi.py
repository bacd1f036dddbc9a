"""How a CustomResourceDefinition's kind is published in /openapi/v2 and /openapi/v3, read by the real kubectl
(1.28 reads v2 for explain, newer ones v3) against a real `capstan serve`: metadata is the shared ObjectMeta
definition, so `kubectl explain <crd>.metadata` shows ObjectMeta's fields, and a CRD without a schema (one that
preserves unknown fields at its root) is published as apiextensions-apiserver's openapi builder publishes it:
a bare object in v2, its schema with apiVersion, kind and metadata in v3.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator

import pytest
import yaml

from tests.e2e.conftest import Kubectl, Obj
from tests.e2e.test_kubectl_crds import PINNED, Names, install

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
METADATA_DESCRIPTION = ("Standard object's metadata. More info: "
                        "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")


@pytest.fixture
def n(kubectl: Kubectl) -> Iterator[Names]:
    names = Names(f"g{uuid.uuid4().hex[:8]}.example.com", uuid.uuid4().hex[:6])
    yield names
    kubectl("delete", "crd", names.crd, "--ignore-not-found", "--wait=false")


def schemaless_crd_yaml(n: Names) -> str:
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": n.crd},
        "spec": {"group": n.group, "scope": "Namespaced",
                 "names": {"plural": n.plural, "singular": n.singular, "kind": n.kind},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})


def published(kubectl: Kubectl, n: Names) -> tuple[Obj, Obj]:
    """The kind's definition in /openapi/v2 and its schema in the group version's /openapi/v3 document."""
    name = ".".join([*reversed(n.group.split(".")), "v1", n.kind])
    v2 = json.loads(kubectl("get", "--raw", "/openapi/v2").out)["definitions"][name]
    v3 = json.loads(kubectl("get", "--raw", f"/openapi/v3/apis/{n.group}/v1").out)["components"]["schemas"][name]
    return v2, v3


@pytest.mark.parametrize("version", [None, *PINNED])
def test_explain_metadata_shows_object_meta(kubectl: Kubectl, n: Names, version: str | None) -> None:
    install(kubectl, n)
    ran = kubectl("explain", f"{n.plural}.metadata", version=version)
    assert ran.code == 0, ran.err
    assert re.search(r"FIELD: +metadata <ObjectMeta>", ran.out), ran.out
    assert "ObjectMeta is metadata that all persisted resources must have" in ran.out, ran.out
    assert re.search(r"\n  annotations\t<map\[string\]string>\n", ran.out), ran.out
    ran = kubectl("explain", f"{n.plural}.metadata.labels", version=version)
    assert ran.code == 0, ran.err
    assert "Map of string keys and values that can be used to organize and categorize" in ran.out


def test_metadata_is_a_ref_to_object_meta(kubectl: Kubectl, n: Names) -> None:
    install(kubectl, n)
    v2, v3 = published(kubectl, n)
    assert v2["properties"]["metadata"] == {"$ref": f"#/definitions/{OBJECT_META}",
                                            "description": METADATA_DESCRIPTION}
    assert v3["properties"]["metadata"] == {"allOf": [{"$ref": f"#/components/schemas/{OBJECT_META}"}],
                                            "description": METADATA_DESCRIPTION}
    for doc in (v2, v3):
        assert doc["properties"]["apiVersion"]["description"].startswith("APIVersion defines the versioned schema")
        assert doc["properties"]["kind"]["description"].startswith("Kind is a string value representing")


def test_a_schemaless_crd_is_published_as_kube_publishes_it(kubectl: Kubectl, n: Names) -> None:
    ran = kubectl("apply", "-f", "-", input=schemaless_crd_yaml(n))
    assert ran.code == 0, ran.err
    ran = kubectl("wait", "--for=condition=Established", f"crd/{n.crd}", "--timeout=10s")
    assert ran.code == 0, ran.err
    gvk = [{"group": n.group, "kind": n.kind, "version": "v1"}]
    v2, v3 = published(kubectl, n)
    assert v2 == {"type": "object", "x-kubernetes-group-version-kind": gvk}
    assert v3["type"] == "object" and v3["x-kubernetes-preserve-unknown-fields"] is True
    assert v3["x-kubernetes-group-version-kind"] == gvk
    assert sorted(v3["properties"]) == ["apiVersion", "kind", "metadata"]
    for version in (None, *PINNED):
        ran = kubectl("explain", n.plural, version=version)
        assert ran.code == 0, ran.err
        assert re.search(rf"KIND: +{n.kind}\n", ran.out), ran.out
