"""`kubectl apply --server-side` for tests: manifests from YAML text, files or dicts, sent as server-side apply.

Works against any cluster the kubeconfig names (a real one too), so it finds each kind's resource and scope from
discovery, as kubectl does, rather than from Capstan's registry.

Contract: documents are applied in the order given (a `List`'s items in place), each with one SSA PATCH under
`field_manager`; a CustomResourceDefinition is waited for until Established (and its kinds until discovery
serves them), so a CRD and its custom resources can share one file. A namespaced object takes its own
namespace, else `namespace`, else "default"; an object naming a namespace other than `namespace` is refused, as
kubectl refuses it. A server's refusal is the client's ApiException, with kube's Status in its body.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from capstan.testing.rest import Obj, request

Manifests = str | os.PathLike[str] | Mapping[str, Any] | Sequence[Mapping[str, Any]]
APPLY = "application/apply-patch+yaml"
FIELD_MANAGER = "capstan-pytest"
CRD_API_VERSION = "apiextensions.k8s.io/v1"
ESTABLISH_TIMEOUT = 30.0  # seconds for a CRD to be Established and served
POLL = 0.05


class Applier:
    """Applies manifests through one ApiClient, caching discovery per group version until a CRD changes it."""

    def __init__(self, api: client.ApiClient, *, field_manager: str = FIELD_MANAGER) -> None:
        self._api = api
        self._field_manager = field_manager
        self._discovery: dict[str, list[Obj]] = {}

    def __call__(self, manifests: Manifests, namespace: str | None = None, *, force: bool = False) -> list[Obj]:
        """The objects as the server stored them, in the order applied."""
        return [self._apply(document, namespace, force=force) for document in documents(manifests)]

    def _apply(self, obj: Obj, namespace: str | None, *, force: bool) -> Obj:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        name = (obj.get("metadata") or {}).get("name")
        if not isinstance(api_version, str) or not isinstance(kind, str) or not isinstance(name, str):
            raise ValueError(f"a manifest needs apiVersion, kind and metadata.name: {obj!r:.200}")
        plural, namespaced = self._resource(api_version, kind)
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if namespaced:
            own = obj["metadata"].get("namespace")
            if own and namespace and own != namespace:
                raise ValueError(f'the namespace from the provided object "{own}" does not match the namespace'
                                 f' "{namespace}". You must pass namespace="{own}" to perform this operation.')
            obj = {**obj, "metadata": {**obj["metadata"], "namespace": own or namespace or "default"}}
            prefix += f"/namespaces/{obj['metadata']['namespace']}"
        query = [("fieldManager", self._field_manager), *([("force", "true")] if force else [])]
        stored = request(self._api, "PATCH", f"{prefix}/{plural}/{name}", query=query, body=obj, content_type=APPLY)
        if api_version == CRD_API_VERSION and kind == "CustomResourceDefinition":
            self._establish(name, stored)
        return stored

    def _resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        """(plural, namespaced) of `kind`; waits ESTABLISH_TIMEOUT for a kind a CRD has just added."""
        deadline = time.monotonic() + ESTABLISH_TIMEOUT
        while True:
            for resource in self._resources(api_version):
                if resource.get("kind") == kind and "/" not in resource.get("name", "/"):
                    return resource["name"], bool(resource.get("namespaced"))
            if time.monotonic() > deadline:
                raise LookupError(f'no resource of kind "{kind}" is served in "{api_version}"')
            self._discovery.pop(api_version, None)
            time.sleep(POLL)

    def _resources(self, api_version: str) -> list[Obj]:
        if api_version not in self._discovery:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            try:
                found = request(self._api, "GET", path)
            except client.ApiException as err:
                if err.status != 404:  # an unknown group version is an empty one: its CRD may be on its way
                    raise
                found = {}
            self._discovery[api_version] = list(found.get("resources") or [])
        return self._discovery[api_version]

    def _establish(self, name: str, crd: Obj) -> None:
        deadline = time.monotonic() + ESTABLISH_TIMEOUT
        while not _established(crd):
            if time.monotonic() > deadline:
                raise TimeoutError(f'CustomResourceDefinition "{name}" not Established within {ESTABLISH_TIMEOUT:g} s')
            time.sleep(POLL)
            crd = request(self._api, "GET", f"/apis/{CRD_API_VERSION}/customresourcedefinitions/{name}")
        group = crd["spec"]["group"]
        for version in crd["spec"].get("versions") or []:
            api_version = f"{group}/{version['name']}"
            self._discovery.pop(api_version, None)
            if version.get("served"):
                self._resource(api_version, crd["spec"]["names"]["kind"])


def _established(crd: Obj) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def documents(manifests: Manifests) -> list[Obj]:
    """The objects in YAML/JSON text, a file, a directory of *.yaml/*.yml/*.json (sorted), a dict or a list."""
    if isinstance(manifests, Mapping):
        return _expand([dict(manifests)])
    if isinstance(manifests, Sequence) and not isinstance(manifests, str):
        return _expand([dict(m) for m in manifests])
    if isinstance(manifests, str) and ("\n" in manifests or not Path(manifests).exists()):
        return _expand(list(yaml.safe_load_all(manifests)))
    path = Path(manifests)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
        return [obj for file in files for obj in documents(file)]
    return _expand(list(yaml.safe_load_all(path.read_text())))


def _expand(loaded: list[Any]) -> list[Obj]:
    objects: list[Obj] = []
    for document in loaded:
        if document is None:
            continue
        if not isinstance(document, dict):
            raise ValueError(f"a manifest is a mapping, not {type(document).__name__}: {document!r:.200}")
        if str(document.get("kind", "")).endswith("List") and isinstance(document.get("items"), list):
            objects.extend(_expand(document["items"]))
        else:
            objects.append(document)
    return objects
