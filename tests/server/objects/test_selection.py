"""server/objects/selection.py: a selection of the key's fields only is decided from the storage key, and
decides as the object would (a watch or list across namespaces by name reads no object to filter it)."""

from __future__ import annotations

import pytest

from server.kinds import BUILTIN
from server.objects.selection import selection
from server.registry.resources import Registry, Resource

REGISTRY = Registry(BUILTIN)


def _resource(name: str) -> Resource:
    found = REGISTRY.get("", "v1", name)
    assert found is not None
    return found


OBJECTS = [("default", "a"), ("default", "kube-root-ca.crt"), ("other", "kube-root-ca.crt"), ("other", "b")]


@pytest.mark.parametrize(("resource", "labels", "fields", "by_key"), [
    ("configmaps", "", "metadata.name=kube-root-ca.crt", True),
    ("configmaps", "", "metadata.namespace=other", True),
    ("configmaps", "", "metadata.namespace!=other,metadata.name!=a", True),
    ("configmaps", "", "metadata.name==b", True),
    ("configmaps", "app=web", "metadata.name=a", False),  # labels need the object
    ("configmaps", "", "", False),  # everything: nothing to decide
    ("pods", "", "spec.nodeName=n1", False),  # a field of the object's body
    ("pods", "", "metadata.name=a,status.phase=Running", False),
    ("namespaces", "", "metadata.name=other", True),  # cluster-scoped: the key is the name
])
def test_the_key_decides_as_the_object_would(resource: str, labels: str, fields: str, by_key: bool) -> None:
    found = _resource(resource)
    chosen = selection(found, labels, fields)
    assert chosen.by_key is by_key
    if not by_key:
        return
    for namespace, name in OBJECTS:
        obj = {"metadata": {"name": name, **({"namespace": namespace} if found.namespaced else {})}}
        key = found.key(namespace, name)
        assert chosen.matches_key(key) is chosen.matches(obj), (namespace, name)
