"""Capstan on a real etcd, end to end: kubectl against `capstan serve --etcd-servers`, an etcd that goes away
and comes back under a running server, and a CRD established through one core served by another.

The faults of the scale-out form (cores, members and leaders killed) are in test_etcd_faults.py.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

from tests.e2e.conftest import Kubectl, Obj, write_kubeconfig
from tests.e2e.etcd_support import Fleet, call, configmap, etcd, fleet, namespace, readyz
from tests.storage.etcd_server import EtcdServer

__all__ = ["etcd", "fleet"]  # fixtures

CM = "/api/v1/namespaces/{ns}/configmaps"


class Watcher:
    """An HTTP watch read on a thread: the events it delivered, in order."""

    def __init__(self, url: str, path: str) -> None:
        parts = urlsplit(url)
        self._conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
        self._conn.request("GET", path, headers={"Accept": "application/json"})
        self._resp = self._conn.getresponse()
        self._sock = self._conn.sock
        assert self._resp.status == 200, self._resp.read()
        self.events: list[Obj] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for line in self._resp:
                if line.strip():
                    self.events.append(json.loads(line))
        except (OSError, ValueError, http.client.HTTPException):  # the watch ended or was cut by close()
            pass

    def names(self, kind: str = "ADDED") -> list[str]:
        return [e["object"]["metadata"]["name"] for e in self.events if e["type"] == kind]

    def wait_for(self, name: str, timeout: float = 10.0, kind: str = "ADDED") -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if name in self.names(kind):
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        if self._sock is not None:  # wakes the reading thread at once (close alone waits for its read)
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)
        self._conn.close()


def test_kubectl_create_get_watch_delete(fleet: Fleet, tmp_path: Path) -> None:
    serving = fleet.serve()
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(fleet.base / "serve", kubeconfig)
    kubectl = Kubectl(kubeconfig, tmp_path / "cache")
    ns = "e2e-etcd-" + uuid.uuid4().hex[:6]
    assert kubectl("create", "namespace", ns).code == 0
    watch = kubectl.start("get", "configmaps", "-n", ns, "--watch", "-o", "name")
    try:
        ran = kubectl("create", "configmap", "first", "-n", ns, "--from-literal=k=v")
        assert ran.code == 0, ran.err
        assert watch.expect(r"configmap/first")
        got = kubectl.json("get", "configmap", "first", "-n", ns, "-o", "json")
        assert got["data"] == {"k": "v"}
        assert int(got["metadata"]["resourceVersion"]) > 0
        assert kubectl("delete", "configmap", "first", "-n", ns).code == 0
        ran = kubectl("get", "configmap", "first", "-n", ns)
        assert ran.code == 1 and 'configmaps "first" not found' in ran.err
    finally:
        watch.stop()
    assert call(serving.address, "GET", f"/api/v1/namespaces/{ns}").code == 200


def test_an_unreachable_etcd_answers_5xx_with_retry_after_and_everything_recovers(
    fleet: Fleet, tmp_path: Path
) -> None:
    own = EtcdServer(tmp_path / "etcd")  # this test stops its etcd: not the session's
    own.start()
    try:
        fleet.servers = own.url
        url = fleet.serve().address
        ns = "e2e-down-" + uuid.uuid4().hex[:6]
        assert call(url, "POST", "/api/v1/namespaces", namespace(ns)).code == 201
        assert call(url, "POST", CM.format(ns=ns), configmap("before")).code == 201
        listed = call(url, "GET", CM.format(ns=ns)).body["metadata"]["resourceVersion"]
        watcher = Watcher(url, CM.format(ns=ns) + f"?watch=1&resourceVersion={listed}")

        own.stop()
        for method, path, body in [("GET", CM.format(ns=ns) + "/before", None),
                                   ("GET", CM.format(ns=ns), None),
                                   ("POST", CM.format(ns=ns), configmap("during"))]:
            started = time.monotonic()
            answer = call(url, method, path, body, timeout=30)
            took = time.monotonic() - started
            assert answer.code == 504 and answer.body["reason"] == "Timeout", (method, path, answer)
            assert answer.headers.get("Retry-After") == "1", answer.headers
            assert answer.body["details"]["retryAfterSeconds"] == 1
            assert took < 10, (method, path, took)  # inside the request's deadline, never a hang
        code, text = readyz(url)
        assert code == 500 and "[-]etcd failed" in text, text

        own.start()
        deadline = time.monotonic() + 15
        while readyz(url)[0] != 200:
            assert time.monotonic() < deadline, readyz(url)[1]
            time.sleep(0.2)
        assert call(url, "POST", CM.format(ns=ns), configmap("after")).code == 201
        assert call(url, "GET", CM.format(ns=ns) + "/before").code == 200
        assert watcher.wait_for("after"), watcher.events  # the store's etcd watch reconnected from its revision
        assert watcher.names() == ["after"]  # nothing replayed twice, nothing invented while etcd was down
        watcher.close()
    finally:
        own.stop()


def widget_crd(group: str) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]},
    }


def test_a_crd_established_through_one_core_is_served_by_the_other_promptly(fleet: Fleet) -> None:
    first, second = fleet.serve("a").address, fleet.serve("b").address
    group = f"g{uuid.uuid4().hex[:8]}.example.com"
    assert call(first, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd(group)).code == 201
    crd_path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}"
    deadline = time.monotonic() + 10
    while True:
        conditions = call(first, "GET", crd_path).body.get("status", {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            break
        assert time.monotonic() < deadline, conditions
        time.sleep(0.02)
    established = time.monotonic()
    widgets = f"/apis/{group}/v1/namespaces/default/widgets"
    while (answer := call(second, "GET", widgets)).code != 200:
        assert answer.code == 404, answer
        assert time.monotonic() - established < 5.0, "the second core did not serve the CRD promptly"
        time.sleep(0.02)
    widget = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}
    assert call(second, "POST", widgets, widget).code == 201
    assert call(first, "GET", widgets + "/w").body["spec"] == {"size": 1}
