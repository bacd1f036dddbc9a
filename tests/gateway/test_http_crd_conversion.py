"""CRD conversion by webhook over HTTP, through both transports: a real HTTPS conversion webhook started by the
test; an object created in v1 reads, lists, watches and updates in v2, and a failing webhook answers a 500
Status on reads and ends a watch with an ERROR event, as kube-apiserver does."""

from __future__ import annotations

from typing import Any

from capstan.testing.webhooks import serve
from tests.gateway.conftest import Server
from tests.gateway.test_http_crds import CRDS, install
from tests.server.crd.test_crd_conversion import conversion_crd, convert, failing

Obj = dict[str, Any]
V1 = "/apis/example.com/v1/namespaces/default/widgets"
V2 = "/apis/example.com/v2/namespaces/default/widgets"


async def test_create_in_v1_read_list_watch_and_write_in_v2(server: Server) -> None:
    async with serve(convert) as hook:
        await install(server, conversion_crd(hook.client_config(), ["v1"]))
        await server.create(V1, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"},
                                 "spec": {"color": "red"}})
        got = (await server.request("GET", f"{V2}/a")).json()
        assert (got["apiVersion"], got["spec"]) == ("example.com/v2", {"paint": "red"})
        listed = (await server.request("GET", V2)).json()
        assert (listed["apiVersion"], [i["spec"] for i in listed["items"]]) == ("example.com/v2", [{"paint": "red"}])
        async with server.watch(f"{V2}?watch=1&resourceVersion={got['metadata']['resourceVersion']}") as stream:
            got["spec"]["paint"] = "blue"
            put = await server.request("PUT", f"{V2}/a", json=got)
            assert (put.status, put.json()["spec"]) == (200, {"paint": "blue"})
            [event] = await stream.lines(1)
            assert (event["type"], event["object"]["apiVersion"], event["object"]["spec"]) == (
                "MODIFIED", "example.com/v2", {"paint": "blue"})
        assert (await server.request("GET", f"{V1}/a")).json()["spec"] == {"color": "blue"}
        crd = (await server.request("GET", f"{CRDS}/widgets.example.com")).json()
        assert crd["status"]["storedVersions"] == ["v1"]


async def test_a_failing_webhook_fails_reads_and_ends_watches(server: Server) -> None:
    async with serve(failing) as hook:
        await install(server, conversion_crd(hook.client_config(), ["v1"]))
        await server.create(V1, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"},
                                 "spec": {"color": "red"}})
        message = "conversion webhook for example.com/v1, Kind=Widget returned failure: cannot convert today"
        for url in (f"{V2}/a", V2):
            answer = await server.request("GET", url)
            assert (answer.status, answer.json()["kind"], answer.json()["message"]) == (500, "Status", message)
        async with server.watch(f"{V2}?watch=1") as stream:
            [event] = await stream.lines(1)
            assert (event["type"], event["object"]["code"], event["object"]["message"]) == ("ERROR", 500, message)
