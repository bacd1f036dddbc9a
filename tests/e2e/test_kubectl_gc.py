"""`kubectl delete --cascade=...` against a real `capstan serve`: the built-in garbage collector at work.

kubectl sends the policy as DeleteOptions.propagationPolicy and then waits for the owner to be gone,
so a foreground delete returns only once the collector has deleted the blocking dependents.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import Capstan, Kubectl, Obj

DEADLINE = 10.0  # seconds the collector may take after kubectl returns


def ref(owner: Obj) -> Obj:
    m = owner["metadata"]
    return {"apiVersion": "v1", "kind": owner["kind"], "name": m["name"], "uid": m["uid"], "blockOwnerDeletion": True}


def gone(capstan: Capstan, path: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while capstan.get(path)[0] != 404:
        assert time.monotonic() < deadline, f"{path} still there after {DEADLINE}s"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("cascade", "survivors"),
    [
        # The owner goes first, then the collector deletes the child and then the grandchild.
        ("background", {}),
        # The owner goes last: it waits for the child (blockOwnerDeletion), deleted in the foreground in turn.
        ("foreground", {}),
        # The owner's reference is removed from the child only; the grandchild still names the child.
        ("orphan", {"secrets/child": [], "configmaps/grandchild": ["child"]}),
    ],
)
def test_delete_cascade(kubectl: Kubectl, capstan: Capstan, namespace: str, cascade: str,
                        survivors: dict[str, list[str]]) -> None:
    base = f"/api/v1/namespaces/{namespace}"
    owner = capstan.create(f"{base}/configmaps", {"metadata": {"name": "owner"}})
    child = capstan.create(f"{base}/secrets", {"metadata": {"name": "child", "ownerReferences": [ref(owner)]}})
    capstan.create(f"{base}/configmaps", {"metadata": {"name": "grandchild", "ownerReferences": [ref(child)]}})
    ran = kubectl("delete", "configmap", "owner", f"--cascade={cascade}", "-n", namespace)
    assert ran == (0, 'configmap "owner" deleted\n', "")
    assert capstan.get(f"{base}/configmaps/owner")[0] == 404  # kubectl waited for it
    if cascade == "foreground":  # ... so everything below it had gone already
        assert [capstan.get(f"{base}/{p}")[0] for p in ("secrets/child", "configmaps/grandchild")] == [404, 404]
    for path in ("secrets/child", "configmaps/grandchild"):
        if path not in survivors:
            gone(capstan, f"{base}/{path}")
    for path, owners in survivors.items():
        code, obj = capstan.get(f"{base}/{path}")
        assert code == 200, obj
        assert [r["name"] for r in obj["metadata"].get("ownerReferences", [])] == owners
