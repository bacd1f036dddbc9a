"""Inline structs (capstan.options.v1.json_inline, Go's `json:",inline"` embedding) for every reader of the
descriptors: the transcoder both ways, the protobuf bytes, strategic merge patch, server-side apply's shapes and
the OpenAPI schemas."""

from __future__ import annotations

from typing import Any, cast

import pytest
from google.protobuf.descriptor import Descriptor

from capstan.api.core.v1 import core_pb2 as core
from gateway.openapi.comments import Comments
from gateway.openapi.schemas import SchemaSet
from server.machinery.codec import DecodeError, decode, encode
from server.machinery.fields.shapes import SCALAR, StructShape, of_message
from server.machinery.patch.strategic import apply_strategic

POD = cast(Descriptor, core.Pod.DESCRIPTOR)


def test_inline_fields_are_nested_on_the_wire() -> None:
    volume = decode(core.Volume, {"name": "data", "emptyDir": {"medium": "Memory"}}).message
    assert volume.volumeSource.emptyDir.medium == "Memory"
    assert encode(volume) == {"name": "data", "emptyDir": {"medium": "Memory"}}


def test_an_absent_inline_struct_is_still_written_as_go_writes_it() -> None:
    """gogo-protobuf always marshals an embedded (non-pointer) struct: `12 00` for an empty VolumeSource."""
    volume = decode(core.Volume, {"name": "x"}).message
    assert volume.SerializeToString() == b"\x0a\x01x\x12\x00"
    assert encode(core.Volume.FromString(b"\x0a\x01x")) == {"name": "x"}


def test_nested_inline_and_shallower_field_order() -> None:
    """EphemeralContainer inlines every Container field; targetContainerName follows them, as in Go."""
    given = {"name": "debug", "image": "busybox", "targetContainerName": "app"}
    printed = encode(decode(core.EphemeralContainer, given).message)
    assert list(printed) == ["name", "image", "resources", "targetContainerName"]


@pytest.mark.parametrize(
    ("cls", "given", "unknown"),
    [
        (core.Volume, {"name": "v", "emptyDir": {}, "bogus": 1}, ["bogus"]),
        (core.Volume, {"name": "v", "emptyDir": {"bogus": 1}}, ["emptyDir.bogus"]),
        (core.EnvVarSource, {"configMapKeyRef": {"name": "c", "key": "k", "x": 1}}, ["configMapKeyRef.x"]),
    ],
)
def test_unknown_fields_beside_inline_ones(cls: Any, given: dict[str, Any], unknown: list[str]) -> None:
    assert decode(cls, given).unknown == unknown


def test_a_type_error_in_an_inline_field_names_the_enclosing_struct() -> None:
    with pytest.raises(DecodeError) as caught:
        decode(core.Probe, {"httpGet": "x"})
    assert str(caught.value) == (
        "json: cannot unmarshal string into Go struct field Probe.httpGet of type v1.HTTPGetAction")


def test_strategic_merge_patch_reads_inline_fields() -> None:
    live = {"metadata": {"name": "p"}, "spec": {"volumes": [{"name": "a", "emptyDir": {}}],
                                                  "containers": [{"name": "c", "image": "i"}]}}
    patch = {"spec": {"volumes": [{"name": "b", "configMap": {"name": "cm"}}],
                      "containers": [{"name": "c", "livenessProbe": {"httpGet": {"path": "/"}}}]}}
    patched = apply_strategic(live, patch, POD)
    assert patched["spec"]["volumes"] == [{"name": "b", "configMap": {"name": "cm"}}, {"name": "a", "emptyDir": {}}]
    assert patched["spec"]["containers"][0]["livenessProbe"] == {"httpGet": {"path": "/"}}


def test_apply_shapes_see_inline_fields() -> None:
    volume = of_message(cast(Descriptor, core.Volume.DESCRIPTOR))
    assert isinstance(volume, StructShape)
    assert volume.is_declared("emptyDir") and volume.is_declared("name")
    assert not volume.is_declared("volumeSource")
    selector = of_message(cast(Descriptor, core.ConfigMapKeySelector.DESCRIPTOR))
    assert selector.field("name") is SCALAR


def test_openapi_schema_flattens_inline_structs() -> None:
    schemas = SchemaSet(Comments(), {})
    schemas.ref(cast(Descriptor, core.Volume.DESCRIPTOR))
    properties = schemas.schemas["io.k8s.api.core.v1.Volume"]["properties"]
    assert "volumeSource" not in properties
    assert {"name", "emptyDir", "configMap", "hostPath", "projected"} <= set(properties)
    schemas.ref(cast(Descriptor, core.Probe.DESCRIPTOR))
    probe = schemas.schemas["io.k8s.api.core.v1.Probe"]["properties"]
    assert {"httpGet", "exec", "grpc", "tcpSocket", "periodSeconds"} <= set(probe)
