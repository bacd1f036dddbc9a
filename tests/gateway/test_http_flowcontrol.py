"""kube's X-Kubernetes-PF-FlowSchema-UID and X-Kubernetes-PF-PriorityLevel-UID headers: every request the core
classifies carries them, whichever transport reaches the core, including refusals and watches."""

from __future__ import annotations

import pytest

from server.machinery.flowcontrol import FLOW_SCHEMA_HEADER, PRIORITY_LEVEL_HEADER
from tests.gateway.conftest import Server

FLOWCONTROL = "/apis/flowcontrol.apiserver.k8s.io/v1beta3"


async def uids(server: Server, schema: str, level: str) -> tuple[str, str]:
    found = await server.request("GET", f"{FLOWCONTROL}/flowschemas/{schema}")
    got = await server.request("GET", f"{FLOWCONTROL}/prioritylevelconfigurations/{level}")
    return found.json()["metadata"]["uid"], got.json()["metadata"]["uid"]


@pytest.mark.parametrize(("method", "path", "status"), [
    ("GET", "/version", 200),
    ("GET", "/api/v1/namespaces/default/configmaps", 200),
    ("GET", "/api/v1/namespaces/default/configmaps/missing", 404),
    ("POST", "/api/v1/namespaces/default/configmaps", 400),  # no body: still classified first
])
async def test_classified_requests_carry_the_uids(server: Server, method: str, path: str, status: int) -> None:
    # the insecure mode's user is in system:masters: kube's exempt FlowSchema and priority level
    expected = await uids(server, "exempt", "exempt")
    resp = await server.request(method, path, body=b"" if method == "POST" else None)
    assert resp.status == status
    assert (resp.headers.get(FLOW_SCHEMA_HEADER), resp.headers.get(PRIORITY_LEVEL_HEADER)) == expected


async def test_a_watch_carries_the_uids(server: Server) -> None:
    expected = await uids(server, "exempt", "exempt")
    async with server.watch("/api/v1/namespaces/default/configmaps?watch=1") as stream:
        assert (stream.headers.get(FLOW_SCHEMA_HEADER), stream.headers.get(PRIORITY_LEVEL_HEADER)) == expected
