"""The bytes of the ControllerRevisions the daemonset and statefulset controllers write: Go clients compare a
revision's data with the patch they compute from the owner, byte for byte (kube's daemon.Match behind
`kubectl rollout undo daemonset` and the upstream DaemonSet e2e tests), so the data must be what kube's getPatch
writes: the owner as Go marshals it, read into a map, its pod template with "$patch": "replace", marshalled again
(keys sorted, every embedded ObjectMeta with "creationTimestamp": null)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from capstan.api.apps.v1 import apps_pb2
from tests.server.client import PROTOBUF, Client, Obj, path
from tests.server.controllers.stateful import (
    NS,
    settled,
    stateful_client_fixture,  # noqa: F401  (the stateful_client fixture)
)

REVISIONS = path("controllerrevisions", NS, group="apps")
TEMPLATES: dict[str, Obj] = {
    "plain": {"metadata": {"labels": {"app": "a"}},
              "spec": {"containers": [{"name": "c", "image": "nginx", "env": [{"name": "Z", "value": "1"}]}]}},
    "annotated-with-ephemeral-volume": {
        "metadata": {"labels": {"app": "a"}, "annotations": {"z": "1", "a": "2"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
                 "volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {
                     "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}]}},
}


def owner(kind: str, template: Obj) -> Obj:
    spec: Obj = {"selector": {"matchLabels": {"app": "a"}}, "template": template}
    if kind == "StatefulSet":
        spec.update(serviceName="a", replicas=0)
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "a"}, "spec": spec}


def go_patch(template: Obj) -> bytes:
    """kube's getPatch over the owner's template as the server answers it: Go prints a zero metav1.Time as null
    and sorts a map's keys."""
    def with_zero_time(meta: Any) -> Obj:
        return {"creationTimestamp": None, **(meta or {})}
    recorded = {**template, "metadata": with_zero_time(template.get("metadata")), "$patch": "replace"}
    for volume in recorded["spec"].get("volumes") or []:
        if claim := (volume.get("ephemeral") or {}).get("volumeClaimTemplate"):
            claim["metadata"] = with_zero_time(claim.get("metadata"))
    return json.dumps({"spec": {"template": recorded}}, sort_keys=True, separators=(",", ":")).encode()


@pytest.mark.parametrize("kind", ["DaemonSet", "StatefulSet"])
@pytest.mark.parametrize("template", TEMPLATES.values(), ids=TEMPLATES.keys())
async def test_revision_data_is_gos_patch(stateful_client: Client, kind: str, template: Obj) -> None:
    client = stateful_client
    resource = kind.lower() + "s"
    created = await client.create(path(resource, NS, group="apps"), owner(kind, template))
    _, items = await settled(lambda: client.list(REVISIONS), lambda got: len(got[1]) == 1)
    raw = await client.get_raw(path("controllerrevisions", NS, items[0]["metadata"]["name"], group="apps"),
                               accept=PROTOBUF)
    revision = apps_pb2.ControllerRevision.FromString(raw.data)
    assert revision.data.raw == go_patch(created["spec"]["template"])


# Both controllers' revisions carry the owner's annotations (kube's newRevision for a StatefulSet, snapshot for a
# DaemonSet): `kubectl rollout history` reads the change-cause `--record` wrote there.
@pytest.mark.parametrize("kind", ["DaemonSet", "StatefulSet"])
@pytest.mark.parametrize("annotations", [{"kubernetes.io/change-cause": "kubectl apply --record=true"}, None],
                         ids=["annotated", "none"])
async def test_a_revision_carries_its_owners_annotations(stateful_client: Client, kind: str,
                                                         annotations: dict[str, str] | None) -> None:
    client = stateful_client
    made = owner(kind, TEMPLATES["plain"])
    if annotations is not None:
        made["metadata"]["annotations"] = annotations
    created = await client.create(path(kind.lower() + "s", NS, group="apps"), made)
    stored = created["metadata"].get("annotations")  # a DaemonSet's also hold its template generation
    assert {**(annotations or {}), **(stored or {})} == (stored or {})
    _, items = await settled(lambda: client.list(REVISIONS), lambda got: len(got[1]) == 1)
    assert items[0]["metadata"].get("annotations") == stored
