"""Table columns of the storage.k8s.io kinds (server/registry/printing/storage_kinds.py) against kube-apiserver 1.28's
printers.go: headers with their types and formats, and the cells, "(default)" after a default class's name."""

from __future__ import annotations

from typing import Any

import pytest

from server.kinds.storage import CSI_DRIVERS, CSI_NODES, CSI_STORAGE_CAPACITIES, STORAGE_CLASSES, VOLUME_ATTACHMENTS
from server.machinery.values import Obj
from server.registry.printing import columns_for
from server.registry.resources import Resource
from tests.server.registry.printing.test_corev1_kinds import AN_HOUR_AGO, cells

HEADERS = [
    (STORAGE_CLASSES, [("Name", "string", "name"), ("Provisioner", "string", ""), ("ReclaimPolicy", "string", ""),
                       ("VolumeBindingMode", "string", ""), ("AllowVolumeExpansion", "string", ""),
                       ("Age", "string", "")]),
    (VOLUME_ATTACHMENTS, [("Name", "string", "name"), ("Attacher", "string", "name"), ("PV", "string", ""),
                          ("Node", "string", ""), ("Attached", "boolean", ""), ("Age", "string", "")]),
    (CSI_NODES, [("Name", "string", "name"), ("Drivers", "integer", ""), ("Age", "string", "")]),
    (CSI_DRIVERS, [("Name", "string", "name"), ("AttachRequired", "boolean", ""), ("PodInfoOnMount", "boolean", ""),
                   ("StorageCapacity", "boolean", ""), ("TokenRequests", "string", ""),
                   ("RequiresRepublish", "boolean", ""), ("Modes", "string", ""), ("Age", "string", "")]),
    # kube 1.28 has no printer for CSIStorageCapacity: its default table convertor's columns.
    (CSI_STORAGE_CAPACITIES, [("Name", "string", "name"), ("Created At", "date", "")]),
]


@pytest.mark.parametrize(("resource", "expected"), [pytest.param(r, e, id=r.resource) for r, e in HEADERS])
def test_headers(resource: Resource, expected: list[tuple[str, str, str]]) -> None:
    assert [(c.name, c.type, c.format) for c in columns_for(resource)] == expected


@pytest.mark.parametrize(("resource", "obj", "expected"), [
    pytest.param(STORAGE_CLASSES, {"metadata": {"name": "fast"}, "provisioner": "example.com/fast"},
                 ["fast", "example.com/fast", "Delete", "Immediate", False, "60m"], id="storageclass unset"),
    pytest.param(STORAGE_CLASSES, {
        "metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "p", "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True}, ["fast (default)", "p", "Retain", "WaitForFirstConsumer", True, "60m"],
        id="storageclass default"),
    pytest.param(STORAGE_CLASSES, {
        "metadata": {"name": "old", "annotations": {"storageclass.beta.kubernetes.io/is-default-class": "true"}},
        "provisioner": "p"}, ["old (default)", "p", "Delete", "Immediate", False, "60m"], id="storageclass beta"),
    pytest.param(STORAGE_CLASSES, {
        "metadata": {"name": "no", "annotations": {"storageclass.kubernetes.io/is-default-class": "True"}},
        "provisioner": "p"}, ["no", "p", "Delete", "Immediate", False, "60m"], id="storageclass not exactly true"),
    pytest.param(VOLUME_ATTACHMENTS, {"metadata": {"name": "va"}, "spec": {
        "attacher": "csi.example.com", "nodeName": "node-1", "source": {"persistentVolumeName": "pv-1"}},
        "status": {"attached": True}}, ["va", "csi.example.com", "pv-1", "node-1", True, "60m"], id="attachment"),
    pytest.param(VOLUME_ATTACHMENTS, {"metadata": {"name": "va"}, "spec": {"attacher": "a", "nodeName": "n",
                                                                          "source": {}}},
                 ["va", "a", "", "n", False, "60m"], id="attachment inline"),
    pytest.param(CSI_NODES, {"metadata": {"name": "node-1"}, "spec": {"drivers": [{"name": "a"}, {"name": "b"}]}},
                 ["node-1", 2, "60m"], id="csinode"),
    pytest.param(CSI_DRIVERS, {"metadata": {"name": "d"}, "spec": {}},
                 ["d", True, False, False, "<unset>", False, "<none>", "60m"], id="csidriver unset"),
    pytest.param(CSI_DRIVERS, {"metadata": {"name": "d"}, "spec": {
        "attachRequired": False, "podInfoOnMount": True, "storageCapacity": True,
        "tokenRequests": [{"audience": "a"}, {"audience": "b"}], "requiresRepublish": True,
        "volumeLifecycleModes": ["Persistent", "Ephemeral"]}},
        ["d", False, True, True, "a,b", True, "Persistent,Ephemeral", "60m"], id="csidriver set"),
    pytest.param(CSI_STORAGE_CAPACITIES, {"metadata": {"name": "c"}, "storageClassName": "fast",
                                          "capacity": "1024Mi"}, ["c", AN_HOUR_AGO], id="capacity"),
])
def test_cells(resource: Resource, obj: Obj, expected: list[Any]) -> None:
    assert cells(resource, obj) == expected
