"""The paths of one group version's document: every operation the served verbs allow, named, worded and
shaped as kube-apiserver's endpoint installer names them.

Per resource (configmaps, namespaced, in core/v1), from the verbs Discover reports:
    /api/v1/namespaces/{namespace}/configmaps          list, create, deletecollection
    /api/v1/namespaces/{namespace}/configmaps/{name}   read, replace, patch, delete
    /api/v1/configmaps                                 list ...ForAllNamespaces
    /api/v1/watch/namespaces/{namespace}/configmaps[/{name}], /api/v1/watch/configmaps   the watch forms
    .../{name}/{subresource}                           read, replace, patch (create) per subresource verbs
Operation ids are verb + group version + [Namespaced] + Kind [+ Subresource], e.g. listCoreV1NamespacedConfigMap,
readCoreV1NamespaceStatus, deleteCoreV1CollectionNamespacedConfigMap, watchCoreV1ConfigMapListForAllNamespaces.
A parameter every operation of a path takes is listed once on the path, as kube-openapi does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.openapi import connect
from gateway.openapi import parameters as params
from gateway.openapi.parameters import Parameter

Doc = dict[str, Any]

MEDIA = ("application/json", "application/vnd.kubernetes.protobuf", "application/yaml")
STREAM_MEDIA = ("application/json", "application/json;stream=watch", "application/vnd.kubernetes.protobuf",
                "application/vnd.kubernetes.protobuf;stream=watch", "application/yaml")
PATCH_TYPES = ("application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json")
_REASONS = {200: "OK", 201: "Created", 202: "Accepted"}

WATCH_DEPRECATED = "deprecated: use the 'watch' parameter with a list operation instead"


@dataclass(frozen=True, slots=True)
class MetaRefs:
    """Schema refs of the meta/v1 types every resource's operations use."""

    status: str
    delete_options: str
    watch_event: str
    patch: str
    resource_list: str


@dataclass(frozen=True, slots=True)
class Refs:
    """Schema refs of one resource: its kind, its list kind and the kind of each subresource."""

    kind: str
    list: str
    subresources: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Operation:
    method: str  # get, post, put, patch, delete
    operation_id: str
    description: str
    parameters: list[Parameter]
    responses: Doc
    action: str = ""  # x-kubernetes-action; "" for operations on no kind (get available resources)
    gvk: Doc | None = None
    body: Doc | None = None


def valid_operation_id(text: str, capitalize: bool) -> str:
    """kube-apiserver's ToValidOperationID: letters kept, anything else dropped and starts a capital."""
    out: list[str] = []
    for i, char in enumerate(text):
        if char.isalpha() or char == "_" or (i and char.isdigit()):
            out.append(char.upper() if capitalize else char)
            capitalize = False
        else:
            capitalize = True
    return "".join(out)


def group_version_id(group: str, version: str) -> str:
    """"" v1 -> CoreV1; rbac.authorization.k8s.io v1 -> RbacAuthorizationV1; example.com v1 -> ExampleComV1."""
    return valid_operation_id((group or "core").removesuffix(".k8s.io"), True) + valid_operation_id(version, True)


def tag(group: str, version: str) -> str:
    """"" v1 -> core_v1; rbac.authorization.k8s.io v1 -> rbacAuthorization_v1."""
    trimmed = (group or "core").removesuffix(".k8s.io")
    return valid_operation_id(trimmed, False) + "_" + valid_operation_id(version, False)


def base_path(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def article(noun: str) -> str:
    """kube's GetArticleForNoun: no article for a plural, "an" before a vowel."""
    if noun.endswith("s") and not noun.endswith("ss"):
        return ""
    return "an " if noun[:1].lower() in "aeiou" else "a "


def responses(ref: str, codes: Iterable[int], media: Sequence[str] = MEDIA) -> Doc:
    content = {m: {"schema": {"$ref": ref}} for m in media}
    out: Doc = {str(code): {"content": content, "description": _REASONS[code]} for code in codes}
    out["401"] = {"description": "Unauthorized"}
    return out


def body(ref: str, media: Sequence[str] = ("*/*",), *, required: bool = True) -> Doc:
    doc: Doc = {"content": {m: {"schema": {"$ref": ref}} for m in media}}
    if required:
        doc["required"] = True
    return doc


def build(group: str, version: str, resources: Sequence[tuple[core_pb2.Resource, Refs]], meta: MetaRefs) -> Doc:
    """The `paths` object of the group version's document."""
    base = base_path(group, version)
    gv = group_version_id(group, version)
    ops: dict[str, list[Operation]] = defaultdict(list)
    ops[base + "/"].append(Operation("get", f"get{gv}APIResources", "get available resources", [],
                                     responses(meta.resource_list, (200,))))
    for resource, refs in resources:
        _resource(ops, resource, refs, meta, base=base, gv=gv)
    path_tag = tag(group, version)
    return {path: _path_item(operations, path_tag) for path, operations in ops.items()}


def _resource(ops: dict[str, list[Operation]], r: core_pb2.Resource, refs: Refs, meta: MetaRefs, *,
              base: str, gv: str) -> None:
    verbs, kind = set(r.verbs), r.kind
    gvk = {"group": r.group, "kind": kind, "version": r.version}
    ns = "Namespaced" if r.namespaced else ""
    scope = [params.namespace()] if r.namespaced else []
    named = [*scope, params.name(kind)]
    collection = f"{base}/namespaces/{{namespace}}/{r.resource}" if r.namespaced else f"{base}/{r.resource}"
    item = collection + "/{name}"
    watched = f"{base}/watch/namespaces/{{namespace}}/{r.resource}" if r.namespaced else f"{base}/watch/{r.resource}"
    listed = responses(refs.list, (200,), STREAM_MEDIA)
    events = responses(meta.watch_event, (200,), STREAM_MEDIA)
    listing = ("list or watch" if "watch" in verbs else "list") + f" objects of kind {kind}"
    watch_list = f"watch individual changes to a list of {kind}. {WATCH_DEPRECATED}."
    delete_body = body(meta.delete_options, required=False)

    if "list" in verbs:
        ops[collection].append(Operation("get", f"list{gv}{ns}{kind}", listing, [*scope, *params.queries(params.LIST)],
                                         listed, "list", gvk))
        if r.namespaced:
            ops[f"{base}/{r.resource}"].append(Operation(
                "get", f"list{gv}{kind}ForAllNamespaces", listing, params.queries(params.LIST), listed, "list", gvk))
    if "create" in verbs:
        ops[collection].append(Operation(
            "post", f"create{gv}{ns}{kind}", f"create {article(kind)}{kind}", [*scope, *params.queries(params.WRITE)],
            responses(refs.kind, (200, 201, 202)), "post", gvk, body(refs.kind)))
    if "deletecollection" in verbs:
        ops[collection].append(Operation(
            "delete", f"delete{gv}Collection{ns}{kind}", f"delete collection of {kind}",
            [*scope, *params.queries(params.DELETE_COLLECTION)], responses(meta.status, (200,)), "deletecollection",
            gvk, delete_body))
    if "get" in verbs:
        ops[item].append(Operation("get", f"read{gv}{ns}{kind}", f"read the specified {kind}",
                                   [*named, *params.queries(())], responses(refs.kind, (200,)), "get", gvk))
    if "update" in verbs:
        ops[item].append(Operation(
            "put", f"replace{gv}{ns}{kind}", f"replace the specified {kind}", [*named, *params.queries(params.WRITE)],
            responses(refs.kind, (200, 201)), "put", gvk, body(refs.kind)))
    if "patch" in verbs:
        ops[item].append(Operation(
            "patch", f"patch{gv}{ns}{kind}", f"partially update the specified {kind}",
            [*named, *params.queries(params.PATCH, patch=True)], responses(refs.kind, (200, 201)), "patch", gvk,
            body(meta.patch, PATCH_TYPES)))
    if "delete" in verbs:
        ops[item].append(Operation(
            "delete", f"delete{gv}{ns}{kind}", f"delete {article(kind)}{kind}",
            [*named, *params.queries(params.DELETE)],
            responses(refs.kind if r.returns_deleted_object else meta.status, (200, 202)), "delete", gvk, delete_body))
    if "watch" in verbs:
        ops[watched].append(Operation("get", f"watch{gv}{ns}{kind}List", watch_list,
                                      [*scope, *params.queries(params.LIST)], events, "watchlist", gvk))
        if r.namespaced:
            ops[f"{base}/watch/{r.resource}"].append(Operation(
                "get", f"watch{gv}{kind}ListForAllNamespaces", watch_list, params.queries(params.LIST), events,
                "watchlist", gvk))
        ops[watched + "/{name}"].append(Operation(
            "get", f"watch{gv}{ns}{kind}",
            f"watch changes to an object of kind {kind}. {WATCH_DEPRECATED}, filtered to a single item with the "
            "'fieldSelector' parameter.", [*named, *params.queries(params.LIST)], events, "watch", gvk))
    for sub in r.subresources:
        if connect.is_connect(r, sub):
            for suffix, method, op_id, text, taken, answers, action, sub_gvk in connect.operations(
                    r, sub, gv=gv, ns=ns, scope=scope):
                ops[f"{item}/{sub.name}{suffix}"].append(Operation(method, op_id, text, taken, answers, action,
                                                                   sub_gvk))
        elif sub.name in refs.subresources:
            _subresource(ops[f"{item}/{sub.name}"], r, sub, refs.subresources[sub.name], meta, gv=gv, ns=ns,
                         scope=scope)


def _subresource(ops: list[Operation], r: core_pb2.Resource, sub: core_pb2.Subresource, ref: str, meta: MetaRefs,
                 *, gv: str, ns: str, scope: list[Parameter]) -> None:
    """Operations on a subresource; parameters and the GVK name the subresource's kind, texts the parent's."""
    verbs, kind, title = set(sub.verbs), r.kind, sub.name[:1].upper() + sub.name[1:]
    gvk = {"group": sub.group, "kind": sub.kind, "version": sub.version} if sub.version else {
        "group": r.group, "kind": sub.kind, "version": r.version}
    named = [*scope, params.name(sub.kind)]
    suffix = f"{gv}{ns}{kind}{title}"
    if "get" in verbs:
        ops.append(Operation("get", f"read{suffix}", f"read {sub.name} of the specified {kind}",
                             [*named, *params.queries(())], responses(ref, (200,)), "get", gvk))
    if "update" in verbs:
        ops.append(Operation("put", f"replace{suffix}", f"replace {sub.name} of the specified {kind}",
                             [*named, *params.queries(params.WRITE)], responses(ref, (200, 201)), "put", gvk,
                             body(ref)))
    if "patch" in verbs:
        ops.append(Operation("patch", f"patch{suffix}", f"partially update {sub.name} of the specified {kind}",
                             [*named, *params.queries(params.PATCH, patch=True)], responses(ref, (200, 201)), "patch",
                             gvk, body(meta.patch, PATCH_TYPES)))
    if "create" in verbs:
        ops.append(Operation("post", f"create{suffix}", f"create {sub.name} of {article(kind)}{kind}",
                             [*named, *params.queries(params.WRITE)], responses(ref, (200, 201, 202)), "post", gvk,
                             body(ref)))


def _key(param: Parameter) -> tuple[str, str]:
    return param["name"], param["in"]


def _path_item(ops: list[Operation], path_tag: str) -> Doc:
    """A path's operations; parameters all of them take move to the path (kube-openapi's common parameters)."""
    common = set.intersection(*({_key(p) for p in op.parameters} for op in ops))
    item: Doc = {}
    shared = sorted((p for p in ops[0].parameters if _key(p) in common), key=_key)
    if shared:
        item["parameters"] = shared
    for op in ops:
        doc: Doc = {"description": op.description, "operationId": op.operation_id, "responses": op.responses,
                    "tags": [path_tag]}
        own = sorted((p for p in op.parameters if _key(p) not in common), key=_key)
        if own:
            doc["parameters"] = own
        if op.body is not None:
            doc["requestBody"] = op.body
        if op.action:
            doc["x-kubernetes-action"] = op.action
            doc["x-kubernetes-group-version-kind"] = op.gvk
        item[op.method] = doc
    return item
