"""Golden bytes and field numbers for the other groups' kinds (storage.k8s.io, certificates.k8s.io, ...).

As in test_wire_kinds.py, every expectation is written by hand from upstream's numbers (the protobuf tags of
k8s.io/api <group>/<version> generated.proto as of 1.28), never derived from our descriptors: a renumbered or
renamed field fails here.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import Message

from capstan.api.certificates.v1 import certificates_pb2 as certificates
from capstan.api.core.v1 import core_pb2 as core
from capstan.api.meta.v1 import meta_pb2 as meta
from capstan.api.resource import resource_pb2 as resource
from capstan.api.storage.v1 import storage_pb2 as storage
from tests.protos.test_wire import entry, int_field, label, len_field


def serialize(msg: Message) -> bytes:
    return msg.SerializeToString(deterministic=True)


def storage_class() -> storage.StorageClass:
    return storage.StorageClass(
        metadata=meta.ObjectMeta(name="fast"), provisioner="example.com/fast", parameters={"type": "ssd"},
        reclaimPolicy="Retain", mountOptions=["ro"], allowVolumeExpansion=True, volumeBindingMode="Immediate",
        allowedTopologies=[core.TopologySelectorTerm(matchLabelExpressions=[
            core.TopologySelectorLabelRequirement(key="zone", values=["a"])])],
    )


STORAGE_CLASS = (
    len_field(1, len_field(1, "fast"))
    + len_field(2, "example.com/fast")
    + entry(3, "type", "ssd")
    + len_field(4, "Retain")
    + len_field(5, "ro")
    + int_field(6, 1)
    + len_field(7, "Immediate")
    + len_field(8, len_field(1, len_field(1, "zone") + len_field(2, "a")))
)


def volume_attachment() -> storage.VolumeAttachment:
    return storage.VolumeAttachment(
        metadata=meta.ObjectMeta(name="va"),
        spec=storage.VolumeAttachmentSpec(attacher="csi.example.com", nodeName="node-1",
                                          source=storage.VolumeAttachmentSource(persistentVolumeName="pv-1")),
        status=storage.VolumeAttachmentStatus(attached=True, attachmentMetadata={"dev": "sdb"},
                                              attachError=storage.VolumeError(message="busy")),
    )


VOLUME_ATTACHMENT = (
    len_field(1, len_field(1, "va"))
    + len_field(2, len_field(1, "csi.example.com") + len_field(2, len_field(1, "pv-1")) + len_field(3, "node-1"))
    + len_field(3, int_field(1, 1) + entry(2, "dev", "sdb") + len_field(3, len_field(2, "busy")))
)


def capacity() -> storage.CSIStorageCapacity:
    return storage.CSIStorageCapacity(
        metadata=meta.ObjectMeta(name="c", namespace="default"),
        nodeTopology=meta.LabelSelector(matchLabels={"zone": "a"}), storageClassName="fast",
        capacity=resource.Quantity(string="10Gi"), maximumVolumeSize=resource.Quantity(string="1Gi"),
    )


CAPACITY = (
    len_field(1, len_field(1, "c") + len_field(3, "default"))
    + len_field(2, entry(1, "zone", "a"))
    + len_field(3, "fast")
    + len_field(4, len_field(1, "10Gi"))
    + len_field(5, len_field(1, "1Gi"))
)

def csr() -> certificates.CertificateSigningRequest:
    return certificates.CertificateSigningRequest(
        metadata=meta.ObjectMeta(name="erin"),
        spec=certificates.CertificateSigningRequestSpec(
            request=b"PEM", signerName="kubernetes.io/kube-apiserver-client", expirationSeconds=3600,
            usages=["client auth"], username="admin", groups=["system:masters"],
            extra={"scopes": certificates.ExtraValue(items=["a"])}),
        status=certificates.CertificateSigningRequestStatus(
            conditions=[certificates.CertificateSigningRequestCondition(type="Approved", status="True")],
            certificate=b"CERT"),
    )


CSR = (
    len_field(1, len_field(1, "erin"))
    + len_field(2, len_field(1, "PEM") + len_field(2, "admin") + len_field(4, "system:masters")
                + len_field(5, "client auth") + len_field(6, len_field(1, "scopes") + len_field(2, len_field(1, "a")))
                + len_field(7, "kubernetes.io/kube-apiserver-client") + int_field(8, 3600))
    + len_field(3, len_field(1, len_field(1, "Approved") + len_field(6, "True")) + len_field(2, "CERT"))
)

GOLDEN = [
    ("StorageClass", storage_class, STORAGE_CLASS),
    ("CertificateSigningRequest", csr, CSR),
    ("VolumeAttachment", volume_attachment, VOLUME_ATTACHMENT),
    ("CSIStorageCapacity", capacity, CAPACITY),
]


@pytest.mark.parametrize(("build", "golden"), [pytest.param(b, g, id=i) for i, b, g in GOLDEN])
def test_kind_encodes_to_upstream_bytes(build: Any, golden: bytes) -> None:
    assert serialize(build()) == golden


@pytest.mark.parametrize(("build", "golden"), [pytest.param(b, g, id=i) for i, b, g in GOLDEN])
def test_kind_decodes_from_upstream_bytes_and_re_encodes_them(build: Any, golden: bytes) -> None:
    msg = type(build()).FromString(golden)
    assert msg == build()
    assert serialize(msg) == golden


# fmt: off
FIELD_NUMBERS: list[tuple[type[Message], dict[str, int]]] = [
    (storage.StorageClass, {"metadata": 1, "provisioner": 2, "parameters": 3, "reclaimPolicy": 4, "mountOptions": 5,
                            "allowVolumeExpansion": 6, "volumeBindingMode": 7, "allowedTopologies": 8}),
    (storage.CSIDriver, {"metadata": 1, "spec": 2}),
    (storage.CSIDriverSpec, {"attachRequired": 1, "podInfoOnMount": 2, "volumeLifecycleModes": 3,
                             "storageCapacity": 4, "fsGroupPolicy": 5, "tokenRequests": 6, "requiresRepublish": 7,
                             "seLinuxMount": 8}),
    (storage.TokenRequest, {"audience": 1, "expirationSeconds": 2}),
    (storage.CSINode, {"metadata": 1, "spec": 2}),
    (storage.CSINodeSpec, {"drivers": 1}),
    (storage.CSINodeDriver, {"name": 1, "nodeID": 2, "topologyKeys": 3, "allocatable": 4}),
    (storage.VolumeNodeResources, {"count": 1}),
    (storage.CSIStorageCapacity, {"metadata": 1, "nodeTopology": 2, "storageClassName": 3, "capacity": 4,
                                  "maximumVolumeSize": 5}),
    (storage.VolumeAttachment, {"metadata": 1, "spec": 2, "status": 3}),
    (storage.VolumeAttachmentSpec, {"attacher": 1, "source": 2, "nodeName": 3}),
    (storage.VolumeAttachmentSource, {"persistentVolumeName": 1, "inlineVolumeSpec": 2}),
    (storage.VolumeAttachmentStatus, {"attached": 1, "attachmentMetadata": 2, "attachError": 3, "detachError": 4}),
    (storage.VolumeError, {"time": 1, "message": 2}),
    (certificates.CertificateSigningRequest, {"metadata": 1, "spec": 2, "status": 3}),
    (certificates.CertificateSigningRequestSpec, {"request": 1, "signerName": 7, "expirationSeconds": 8,
                                                  "usages": 5, "username": 2, "uid": 3, "groups": 4, "extra": 6}),
    (certificates.ExtraValue, {"items": 1}),
    (certificates.CertificateSigningRequestStatus, {"conditions": 1, "certificate": 2}),
    (certificates.CertificateSigningRequestCondition, {"type": 1, "status": 6, "reason": 2, "message": 3,
                                                       "lastUpdateTime": 4, "lastTransitionTime": 5}),
]
# fmt: on


@pytest.mark.parametrize(("message", "numbers"), [pytest.param(*c, id=label(c[0])) for c in FIELD_NUMBERS])
def test_every_field_has_upstream_name_and_number(message: type[Message], numbers: dict[str, int]) -> None:
    assert {f.name: f.number for f in message.DESCRIPTOR.fields} == numbers


LISTED: list[type[Message]] = [
    storage.StorageClass, storage.CSIDriver, storage.CSINode, storage.CSIStorageCapacity, storage.VolumeAttachment,
    certificates.CertificateSigningRequest,
]


@pytest.mark.parametrize("kind", [pytest.param(k, id=label(k)) for k in LISTED])
def test_kind_list_is_list_meta_and_items(kind: type[Message]) -> None:
    listing = kind.DESCRIPTOR.file.message_types_by_name[kind.DESCRIPTOR.name + "List"]
    assert [(f.name, f.number) for f in listing.fields] == [("metadata", 1), ("items", 2)]
    metadata, items = listing.fields
    assert metadata.message_type is meta.ListMeta.DESCRIPTOR
    assert items.is_repeated and items.message_type is kind.DESCRIPTOR
