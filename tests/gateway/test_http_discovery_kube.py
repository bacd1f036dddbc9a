"""Capstan's discovery against kube-apiserver 1.28's, recorded in data/kube-1.28-discovery.json: every group
version, resource and subresource kube lists is listed with kube's kind, scope, singular name, short names,
categories and at least kube's verbs.

What Capstan does not serve yet is named in EXPECTED_MISSING, one row per resource: the test fails when anything
else goes missing, and a row that starts being served needs no change here (the groups other engineers are adding
land on their own).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.conftest import Server

Obj = dict[str, Any]
RECORDED: Obj = json.loads((Path(__file__).parent / "data" / "kube-1.28-discovery.json").read_text())
GROUP_VERSIONS: dict[str, list[Obj]] = {gv: doc["resources"] for gv, doc in RECORDED["groupVersions"].items()}

# (group/version, resource) rows kube 1.28 serves that Capstan does not serve yet.
EXPECTED_MISSING: frozenset[tuple[str, str]] = frozenset({
    # Registered with a token issuer only: these tests run the insecure core (capstan serve has one).
    ("v1", "serviceaccounts/token"),
})
COMPARED = ("kind", "namespaced", "singularName", "shortNames", "categories")


def _path(group_version: str) -> str:
    return "/api/v1" if group_version == "v1" else f"/apis/{group_version}"


async def _served(server: Server, group_version: str) -> dict[str, Obj]:
    resp = await server.request("GET", _path(group_version))
    if resp.status == 404:
        return {}
    assert resp.status == 200
    return {r["name"]: r for r in resp.json()["resources"]}


def test_the_expected_missing_rows_are_kubes() -> None:
    recorded = {(gv, r["name"]) for gv, resources in GROUP_VERSIONS.items() for r in resources}
    assert recorded >= EXPECTED_MISSING


@pytest.mark.parametrize("group_version", list(GROUP_VERSIONS))
async def test_discovery_lists_what_kube_lists(server: Server, group_version: str) -> None:
    served = await _served(server, group_version)
    missing, different = [], []
    for expected in GROUP_VERSIONS[group_version]:
        name = expected["name"]
        got = served.get(name)
        if got is None:
            if (group_version, name) not in EXPECTED_MISSING:
                missing.append(name)
            continue
        if not set(expected["verbs"]) <= set(got.get("verbs") or []):
            different.append((name, "verbs", expected["verbs"], got.get("verbs")))
        for field in COMPARED:
            want, have = expected.get(field), got.get(field)
            if field == "singularName" and "/" in name:
                continue  # subresources carry none worth comparing
            if (want or None) != (have or None):
                different.append((name, field, want, have))
    assert (missing, different) == ([], [])


async def test_groups_list_kubes_preferred_versions(server: Server) -> None:
    """/apis names every served kube group with kube's preferred version (the first recorded)."""
    groups = {g["name"]: g for g in (await server.request("GET", "/apis")).json()["groups"]}
    preferred: dict[str, str] = {}
    for group_version in GROUP_VERSIONS:
        if "/" in group_version:
            group, version = group_version.split("/")
            preferred.setdefault(group, version)
    for group, version in preferred.items():
        if group in groups:
            assert groups[group]["preferredVersion"]["version"] == version, group
    served_kube_groups = {gv.split("/")[0] for gv in GROUP_VERSIONS if "/" in gv} & set(groups)
    expected_groups = {gv.split("/")[0] for gv in GROUP_VERSIONS if "/" in gv
                       if any((gv, r["name"]) not in EXPECTED_MISSING for r in GROUP_VERSIONS[gv])}
    assert expected_groups <= served_kube_groups
