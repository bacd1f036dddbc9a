"""DELETE of one object and of a collection; DeleteOptions from the body, or else from the query.

A body is read as kube-apiserver's handlers/delete.go reads it: through the meta scheme
(k8s.io/apimachinery meta/internalversion/scheme), with meta.k8s.io/v1 DeleteOptions as the default
type. That scheme registers DeleteOptions as an unversioned kind, which it creates for *any* group
version, so the DeleteOptions client-go sends in the resource's own group version (``batch/v1``,
``apiextensions.k8s.io/v1``, a custom resource's ``example.com/v1``, …) is accepted as well as
``meta.k8s.io/v1`` and the legacy ``v1``, in JSON, YAML and protobuf alike. Any other kind fails where the
scheme fails: it has no such kind in that group version, or has one that does not convert to DeleteOptions.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway import negotiation, params
from gateway.client import CoreClient, CoreError, failure
from gateway.codecs import protobuf as protobuf_codec
from gateway.codecs import yaml as yaml_codec
from gateway.handlers import request as req
from gateway.handlers import respond
from gateway.handlers.request import Call
from gateway.negotiation import CodecName
from server.machinery.codec import gojson, goscan, transcode
from server.machinery.codec.errors import DecodeError

META_GROUP, META_VERSION, INTERNAL = "meta.k8s.io", "v1", "__internal"  # the handlers' default; the hub version
OPTIONS_KIND = "DeleteOptions"

# Kinds the meta scheme creates in any group version (AddUnversionedTypes), by the Go type they decode to.
_ANY_VERSION = {
    OPTIONS_KIND: "v1.DeleteOptions", "CreateOptions": "v1.CreateOptions", "UpdateOptions": "v1.UpdateOptions",
    "Status": "v1.Status", "APIVersions": "v1.APIVersions", "APIGroupList": "v1.APIGroupList",
    "APIGroup": "v1.APIGroup", "APIResourceList": "v1.APIResourceList",
}
_META_V1BETA1 = {  # metav1beta1.AddMetaToScheme; all but the list are aliases of the v1 types
    "Table": "v1.Table", "TableOptions": "v1.TableOptions", "PartialObjectMetadata": "v1.PartialObjectMetadata",
    "PartialObjectMetadataList": "v1beta1.PartialObjectMetadataList",
}
# Kinds it knows in one group version only (internalversion.addToGroupVersion, metav1.AddToGroupVersion).
_KNOWN: dict[tuple[str, str], dict[str, str]] = {
    (META_GROUP, META_VERSION): {
        "ListOptions": "v1.ListOptions", "GetOptions": "v1.GetOptions", "PatchOptions": "v1.PatchOptions",
        "WatchEvent": "v1.WatchEvent", "Table": "v1.Table", "TableOptions": "v1.TableOptions",
        "PartialObjectMetadata": "v1.PartialObjectMetadata",
        "PartialObjectMetadataList": "v1.PartialObjectMetadataList",
    },
    (META_GROUP, "v1beta1"): _META_V1BETA1,
    (META_GROUP, INTERNAL): {
        **_META_V1BETA1, "ListOptions": "internalversion.ListOptions", "GetOptions": "v1.GetOptions",
        "WatchEvent": "v1.InternalEvent",
    },
}
# runtime.NewScheme names a scheme after the line that made it; kube-apiserver vendors apimachinery.
_SCHEME_NAME = "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go:27"


async def delete(client: CoreClient, call: Call, http: web.Request) -> web.Response:
    call.admit()
    options = params.delete_options(call.query, await _body_options(http))
    deleted = await call.within_deadline(client.delete(core_pb2.DeleteRequest(
        path=call.path, options=options, accept=respond.core_accept(call.out), view=call.view())))
    if deleted.HasField("status"):
        return respond.status(call.out, deleted.status)
    return respond.document(call.out, deleted.object, api_version=call.api_version, kind=call.resource.kind)


async def delete_collection(client: CoreClient, call: Call, http: web.Request) -> web.Response:
    call.admit()
    list_options = params.list_options(call.query)
    options = params.delete_options(call.query, await _body_options(http))
    deleted = await call.within_deadline(client.delete_collection(core_pb2.DeleteCollectionRequest(
        path=call.path, list_options=list_options, delete_options=options, accept=respond.core_accept(call.out),
        view=call.view())))
    return respond.list_document(call.out, deleted.deleted)


async def _body_options(http: web.Request) -> meta_pb2.DeleteOptions | None:
    """DeleteOptions sent as the body, if any, in any of the three media types (kube-apiserver negotiates
    the body's serializer as for objects: 415 for others). An empty body means none."""
    data = await req.read_limited(http)
    if not data:
        return None
    media = negotiation.negotiate_input(http.headers.get("Content-Type"), protobuf=True)
    if media.codec is CodecName.PROTOBUF:
        return _protobuf_options(data)
    original = data
    if media.codec is CodecName.YAML:
        try:
            data = yaml_codec.decode(data)
        except yaml_codec.YAMLError as err:
            raise _bad(err.message) from None
    try:
        doc = goscan.loads(data)
    except goscan.Refused as err:  # kube: the same words as a 500; a malformed body is the client's 400 here
        raise _bad(f"couldn't get version/kind; json parse error: {err.message}") from None
    except orjson.JSONDecodeError as err:
        raise _bad(f"json: {err}") from None
    group, version, kind = _interpret(doc)
    if not version:  # gvkWithDefaults leaves "batch/" without one
        raise _bad(f"Object 'apiVersion' is missing in '{original.decode(errors='replace')}'")
    _check_kind(group, version, kind or OPTIONS_KIND)
    if doc is None:
        return meta_pb2.DeleteOptions()  # JSON null unmarshals into the empty options
    try:
        return transcode.decode(meta_pb2.DeleteOptions, doc).message
    except DecodeError as err:
        raise _bad(str(err)) from None


def _protobuf_options(data: bytes) -> meta_pb2.DeleteOptions:
    try:
        raw, api_version, kind = protobuf_codec.decode(data)
    except protobuf_codec.EnvelopeError as err:
        raise _bad(err.message) from None
    group, version = _split(api_version) if api_version.count("/") <= 1 else ("", "")  # FromAPIVersionAndKind
    if not version:  # copyKindDefaults takes the default's group with its version
        group, version = META_GROUP, META_VERSION
    _check_kind(group, version, kind or OPTIONS_KIND)
    try:
        return meta_pb2.DeleteOptions.FromString(raw)
    except Exception as err:  # google.protobuf.message.DecodeError, whatever the runtime calls it
        raise _bad(f"proto: DeleteOptions: {err}") from None


def _interpret(doc: Any) -> tuple[str, str, str]:
    """(group, version, kind) of a JSON body as SimpleMetaFactory.Interpret reads them, the group version
    defaulted from meta.k8s.io/v1 when the body names neither. encoding/json matches the two keys in any
    case, and a later match wins."""
    problem = gojson.type_meta_problem(doc)
    if problem is not None:
        raise _bad(f"couldn't get version/kind; json parse error: {problem}")
    names = {"apiversion": "", "kind": ""}
    for key, value in (doc or {}).items():
        field = key.casefold()
        if field in names and value is not None:
            names[field] = value
    api_version = names["apiversion"]
    if api_version.count("/") > 1:
        raise _bad(f"unexpected GroupVersion string: {api_version}")  # schema.ParseGroupVersion
    group, version = _split(api_version)
    if not group and not version:
        group, version = META_GROUP, META_VERSION
    elif not version and group == META_GROUP:
        version = META_VERSION
    return group, version, names["kind"]


def _split(api_version: str) -> tuple[str, str]:
    """schema.ParseGroupVersion of a string with at most one slash; "/" is the empty group version."""
    if api_version in ("", "/"):
        return "", ""
    group, _, version = api_version.rpartition("/")
    return group, version


def _check_kind(group: str, version: str, kind: str) -> None:
    """Refuse what the meta scheme would not turn into DeleteOptions, with the scheme's own error: the kind
    is unknown in that group version (Scheme.New), or known but of a type with no conversion to
    DeleteOptions. kube-apiserver passes both on untyped, which makes a 500; Capstan answers the 400 it is."""
    go_type = _KNOWN.get((group, version), {}).get(kind) or _ANY_VERSION.get(kind)
    if go_type == "v1.DeleteOptions":
        return
    if go_type is not None:
        raise _bad(f"converting ({go_type}) to (v1.DeleteOptions): unknown conversion")
    if version == INTERNAL:
        raise _bad(f'no kind "{kind}" is registered for the internal version of group "{group}" '
                   f'in scheme "{_SCHEME_NAME}"')
    group_version = f"{group}/{version}" if group else version
    raise _bad(f'no kind "{kind}" is registered for version "{group_version}" in scheme "{_SCHEME_NAME}"')


def _bad(message: str) -> CoreError:
    """A body that is no DeleteOptions. kube-apiserver passes the decoder's error on untyped, which
    becomes a 500; Capstan answers the 400 it is."""
    return CoreError(failure(400, "BadRequest", message))
