"""Discovery documents, built from the core's Discover answer: /version, /api, /apis and their
group/version resource lists, in the legacy form and the aggregated (apidiscovery.k8s.io v2/v2beta1) form.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import version as release

# The Kubernetes version Capstan's API answers as (server/machinery/version.py); kubectl's version dispatch reads it.
GIT_VERSION = release.KUBE_GIT_VERSION

Doc = dict[str, Any]


def version() -> Doc:
    return release.info()


def _group_versions(resources: Iterable[core_pb2.Resource],
                    aggregated: Iterable[core_pb2.AggregatedVersion] = ()) -> dict[str, list[str]]:
    """group -> its versions, the groups in kube-aggregator's order (groupPriorityMinimum highest first, then by
    name; the core ranks its own group versions, Resource.group_priority); a served group's versions in
    registration order (the first is preferred), then those extension API servers serve by their APIServices'
    versionPriority, highest first."""
    out: dict[str, list[str]] = {}
    rank: dict[str, int] = {}
    for r in resources:
        versions = out.setdefault(r.group, [])
        if r.version not in versions:
            versions.append(r.version)
        rank[r.group] = max(rank.get(r.group, r.group_priority), r.group_priority)
    remote = sorted(aggregated, key=lambda a: (-a.group_priority_minimum, a.group, -a.version_priority, a.version))
    for a in remote:
        versions = out.setdefault(a.group, [])
        if a.version not in versions:
            versions.append(a.version)
        rank[a.group] = max(rank.get(a.group, a.group_priority_minimum), a.group_priority_minimum)
    return {group: out[group] for group in sorted(out, key=lambda g: (-rank[g], g))}


def api_versions(server_address: str) -> Doc:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group(group: str, versions: list[str]) -> Doc:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(discovered: core_pb2.DiscoverResponse) -> Doc:
    groups = [api_group(g, vs) for g, vs in _group_versions(discovered.resources, discovered.aggregated).items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def group(discovered: core_pb2.DiscoverResponse, name: str) -> Doc | None:
    versions = _group_versions(discovered.resources, discovered.aggregated).get(name)
    if not name or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **api_group(name, versions)}


def resource_list(discovered: core_pb2.DiscoverResponse, group: str, version: str) -> Doc | None:
    resources = [r for r in discovered.resources if r.group == group and r.version == version]
    if not resources:
        return None
    entries: list[Doc] = []
    for r in resources:
        entry: Doc = {
            "name": r.resource,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        if r.storage_version_hash:
            entry["storageVersionHash"] = r.storage_version_hash
        entries.append(entry)
        for sub in r.subresources:
            sub_entry: Doc = {"name": f"{r.resource}/{sub.name}", "singularName": "", "namespaced": r.namespaced}
            if sub.version:  # a kind of another group version: /scale's autoscaling/v1 Scale
                sub_entry.update(_sub_group_version(r, sub))
            sub_entry.update(kind=sub.kind, verbs=list(sub.verbs))
            entries.append(sub_entry)
    entries.sort(key=lambda entry: str(entry["name"]))  # kube-apiserver's installer registers paths sorted
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": entries,
    }


def aggregated(discovered: core_pb2.DiscoverResponse, *, legacy: bool, api_version: str) -> Doc:
    """APIGroupDiscoveryList: the core group for /api (legacy=True), every other group for /apis."""
    items: list[Doc] = []
    remote = {(a.group, a.version): a for a in discovered.aggregated}
    for name, versions in _group_versions(discovered.resources, discovered.aggregated).items():
        if (name == "") != legacy:
            continue
        version_docs = []
        for v in versions:
            backend = remote.get((name, v))
            if backend is not None:
                if backend.resources:
                    version_docs.append(_aggregated_backend(backend))
                continue
            served = sorted((r for r in discovered.resources if r.group == name and r.version == v),
                            key=lambda r: r.resource)
            resources = [_aggregated_resource(r) for r in served]
            version_docs.append({"version": v, "resources": resources, "freshness": "Current"})
        if not version_docs:
            continue
        # ObjectMeta's name is omitempty: the legacy group's item has no name at all.
        metadata: Doc = {"name": name, "creationTimestamp": None} if name else {"creationTimestamp": None}
        items.append({"metadata": metadata, "versions": version_docs})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items}


def _aggregated_resource(r: core_pb2.Resource) -> Doc:
    """kube-apiserver 1.28's APIResourceDiscovery: a built-in kind's responseKind leaves its own group and version
    empty (the installer copies APIResource's, which are set only for another group version's kind, /scale's
    Scale); a custom resource's names them (apiextensions-apiserver's discovery controller)."""
    doc: Doc = {
        "resource": r.resource,
        "responseKind": {**_own_group_version(r), "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        doc["shortNames"] = list(r.short_names)
    if r.categories:
        doc["categories"] = list(r.categories)
    if r.subresources:
        doc["subresources"] = [
            {
                "subresource": sub.name,
                "responseKind": {**(_sub_group_version(r, sub) if sub.version else _own_group_version(r)),
                                 "kind": sub.kind},
                "verbs": list(sub.verbs),
            }
            for sub in sorted(r.subresources, key=lambda sub: sub.name)
        ]
    return doc


def _aggregated_backend(backend: core_pb2.AggregatedVersion) -> Doc:
    """An extension API server's APIResourceList as an APIVersionDiscovery, as kube-aggregator converts the
    legacy discovery of a backend that serves no aggregated discovery: subresources (`x/y`) under their resource,
    each responseKind's group and version as the entry gives them (empty: the list's own); `Stale` while its
    APIService is not Available."""
    try:
        listed = orjson.loads(backend.resources)
    except orjson.JSONDecodeError:
        listed = {}
    entries = [e for e in (listed.get("resources") or []) if isinstance(e, dict) and e.get("name")]
    docs: dict[str, Doc] = {}
    for e in sorted((e for e in entries if "/" not in e["name"]), key=lambda e: str(e["name"])):
        doc: Doc = {
            "resource": e["name"],
            "responseKind": _entry_kind(e),
            "scope": "Namespaced" if e.get("namespaced") else "Cluster",
            "singularResource": e.get("singularName", ""),
            "verbs": list(e.get("verbs") or []),
        }
        for key in ("shortNames", "categories"):
            if e.get(key):
                doc[key] = list(e[key])
        docs[e["name"]] = doc
    for e in sorted((e for e in entries if "/" in e["name"]), key=lambda e: str(e["name"])):
        parent, _, sub = str(e["name"]).partition("/")
        if parent in docs:
            docs[parent].setdefault("subresources", []).append({
                "subresource": sub,
                "responseKind": _entry_kind(e),
                "verbs": list(e.get("verbs") or []),
            })
    return {"version": backend.version, "resources": list(docs.values()),
            "freshness": "Current" if backend.available else "Stale"}


def _entry_kind(entry: Doc) -> Doc:
    return {"group": entry.get("group", ""), "version": entry.get("version", ""), "kind": entry.get("kind", "")}


def _sub_group_version(r: core_pb2.Resource, sub: core_pb2.Subresource) -> Doc:
    """The group and version of a subresource's kind: its own when it names one, else the resource's."""
    return {"group": sub.group, "version": sub.version} if sub.version else {"group": r.group, "version": r.version}


def _own_group_version(r: core_pb2.Resource) -> Doc:
    """responseKind's group and version for a kind of r's own group version: named for a custom resource (JSON
    only, or with the CRD's schema beside its registered message), empty for a built-in one."""
    custom = not r.proto_message or bool(r.json_schema)
    return {"group": r.group, "version": r.version} if custom else {"group": "", "version": ""}
