"""The OpenAPI v3 documents of the paths outside every group version, as kube-apiserver's index lists them:

  "api"           GET /api/           getCoreAPIVersions   meta/v1 APIVersions
  "apis"          GET /apis/          getAPIVersions       meta/v1 APIGroupList
  "apis/<group>"  GET /apis/<group>/  get<Group>APIGroup   meta/v1 APIGroup (one per served group)
  "version"       GET /version/       getCodeVersion       version.Info (JSON only)

Operation ids and tags are kube's GetOperationIDAndTagsFromRoute over the discovery routes (`/api` read as
`/apis/core`, a group's `.k8s.io` dropped); the discovery answers are offered as JSON, protobuf and YAML.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gateway.openapi import comments, paths
from gateway.openapi.schemas import META, SchemaSet

Doc = dict[str, Any]

# version.Info has no protobuf message; its schema as kube-openapi publishes it.
VERSION_INFO = "io.k8s.apimachinery.pkg.version.Info"
_VERSION_FIELDS = ("major", "minor", "gitVersion", "gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler",
                   "platform")
VERSION_INFO_SCHEMA: Doc = {
    "description": "Info contains versioning information. how we'll want to distribute that information.",
    "properties": {name: {"default": "", "type": "string"} for name in _VERSION_FIELDS},
    "required": list(_VERSION_FIELDS),
    "type": "object",
}


def documents(groups: Iterable[str], find: Callable[[str], Any]) -> dict[str, tuple[SchemaSet, Doc]]:
    """The schemas and paths of each root document, by its index name; `find` looks a message up by full name."""
    def discovery(path: str, operation_id: str, tag: str, description: str, kind: str) -> tuple[SchemaSet, Doc]:
        schemas = SchemaSet(comments.load(), {})
        message = find(META + kind)
        if message is None:
            raise LookupError(f"{META}{kind} is not in the descriptor pool")
        operation = {"description": description, "operationId": operation_id, "tags": [tag],
                     "responses": paths.responses(schemas.ref(message), (200,))}
        return schemas, {path: {"get": operation}}

    out = {
        "api": discovery("/api/", "getCoreAPIVersions", "core", "get available API versions", "APIVersions"),
        "apis": discovery("/apis/", "getAPIVersions", "apis", "get available API versions", "APIGroupList"),
    }
    for group in sorted(set(groups)):
        name = paths.valid_operation_id(group.removesuffix(".k8s.io"), True)
        out[f"apis/{group}"] = discovery(f"/apis/{group}/", f"get{name}APIGroup",
                                         paths.valid_operation_id(group.removesuffix(".k8s.io"), False),
                                         "get information of a group", "APIGroup")
    schemas = SchemaSet(comments.load(), {})
    ref = schemas.add(VERSION_INFO, VERSION_INFO_SCHEMA)
    out["version"] = schemas, {"/version/": {"get": {
        "description": "get the code version", "operationId": "getCodeVersion", "tags": ["version"],
        "responses": paths.responses(ref, (200,), ("application/json",))}}}
    return out
