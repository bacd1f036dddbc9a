"""grpc.health.v1's List method, whichever grpcio-health-checking is installed.

The core answers its named checks through the standard health service, and a gateway across the network reads
them all with one List call (server/service/grpc_server.py, gateway/transport/grpc.py). grpcio-health-checking
ships List's messages only from the releases that require protobuf 7; with an older one (what a project pinned
to protobuf 5 or 6 resolves to) they are defined here, in the default pool, as grpc/health/v1/health.proto
defines them (same package, names and fields, so the same bytes on the wire), in a file of their own beside the
installed health.proto. Server and client then register and call List by its path.

Contract: `messages()` returns (HealthListRequest, HealthListResponse), the installed package's when it has
them; defining them happens once per process. Standard library, protobuf and grpcio-health-checking only.
"""

from __future__ import annotations

import functools
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_health.v1 import health_pb2

LIST_METHOD = "/grpc.health.v1.Health/List"
_FILE = "capstan/grpc_health_v1_list.proto"  # ours: the installed health.proto's file name stays its own
_PACKAGE = "grpc.health.v1"


@functools.cache
def messages() -> tuple[Any, Any]:
    """The List request and response classes (protobuf messages: `statuses` maps a service to its
    HealthCheckResponse)."""
    installed: Any = health_pb2
    if hasattr(installed, "HealthListRequest") and hasattr(installed, "HealthListResponse"):
        return installed.HealthListRequest, installed.HealthListResponse
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(_FILE)
    except KeyError:
        pool.Add(_file())
    return (message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.HealthListRequest")),
            message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.HealthListResponse")))


def _file() -> descriptor_pb2.FileDescriptorProto:
    label = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name=_FILE, package=_PACKAGE, syntax="proto3",
                                               dependency=[health_pb2.DESCRIPTOR.name])
    proto.message_type.add(name="HealthListRequest")
    response = proto.message_type.add(name="HealthListResponse")
    entry = response.nested_type.add(name="StatusesEntry", options=descriptor_pb2.MessageOptions(map_entry=True))
    entry.field.add(name="key", number=1, label=label.LABEL_OPTIONAL, type=label.TYPE_STRING, json_name="key")
    entry.field.add(name="value", number=2, label=label.LABEL_OPTIONAL, type=label.TYPE_MESSAGE,
                    type_name=f".{_PACKAGE}.HealthCheckResponse", json_name="value")
    response.field.add(name="statuses", number=1, label=label.LABEL_REPEATED, type=label.TYPE_MESSAGE,
                       type_name=f".{_PACKAGE}.HealthListResponse.StatusesEntry", json_name="statuses")
    return proto
