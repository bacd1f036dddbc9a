"""Faults of the scale-out form, tested on real processes: a core SIGKILLed under writes through two gateways,
an etcd member SIGKILLed under writes to a 3-member cluster, and the leader core killed mid-deletion.

What each must keep: every write acknowledged with a 2xx is in etcd afterwards; clients see nothing worse
than a retryable 5xx (one that carries Retry-After, or the 504 Timeout kube answers when a write's outcome is
unknown); a watcher through a gateway sees each object once and none missing; the singletons go on in the
standby. Each test is bounded (a few seconds of writes, deadlines on every wait).
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.etcd_support import Answer, Fleet, Process, call, configmap, etcd, fleet, namespace
from tests.e2e.test_etcd import CM, Watcher
from tests.storage.etcd_server import EtcdCluster

__all__ = ["etcd", "fleet"]  # fixtures

RETRYABLE = {503, 504}  # with Retry-After, or the 504 Timeout of a write whose outcome is unknown


@dataclass
class Writers:
    """Threads creating ConfigMaps with fresh names through some URLs until stopped."""

    urls: list[str]
    ns: str
    acked: list[str] = field(default_factory=list)
    failed: list[Answer] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)  # a dropped connection: never acceptable
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self, per_url: int = 2) -> None:
        for i, url in enumerate(self.urls * per_url):
            thread = threading.Thread(target=self._write, args=(url, i), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _write(self, url: str, worker: int) -> None:
        step = 0
        while not self._stop.is_set():
            name = f"w{worker}-{step}"
            step += 1
            try:
                answer = call(url, "POST", CM.format(ns=self.ns), configmap(name), timeout=20)
            except OSError as err:
                self.broken.append(f"{name}: {err}")
                continue
            if answer.code == 201:
                self.acked.append(name)
            else:
                self.failed.append(answer)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def check(self) -> None:
        assert not self.broken, self.broken
        for answer in self.failed:
            assert answer.code in RETRYABLE, answer
            assert answer.code == 504 or "Retry-After" in answer.headers, answer


def stored_names(url: str, ns: str) -> set[str]:
    answer = call(url, "GET", CM.format(ns=ns))
    assert answer.code == 200, answer
    return {item["metadata"]["name"] for item in answer.body["items"]}


def test_sigkill_a_core_under_writes_through_two_gateways(fleet: Fleet) -> None:
    cores = [fleet.core("a"), fleet.core("b")]
    gateways = [fleet.gateway("ga", cores), fleet.gateway("gb", cores)]
    ns = "e2e-kill-" + uuid.uuid4().hex[:6]
    assert call(gateways[0].address, "POST", "/api/v1/namespaces", namespace(ns)).code == 201
    listed = call(gateways[0].address, "GET", CM.format(ns=ns)).body["metadata"]["resourceVersion"]
    watcher = Watcher(gateways[0].address, CM.format(ns=ns) + f"?watch=1&resourceVersion={listed}")
    writers = Writers([g.address for g in gateways], ns)
    writers.start()
    time.sleep(1.5)
    cores[0].kill()
    time.sleep(2.5)
    writers.stop()
    writers.check()
    after_kill = len(writers.acked)
    assert after_kill > 20, "writes did not go on through the surviving core"
    stored = stored_names(gateways[1].address, ns)
    assert set(writers.acked) <= stored, set(writers.acked) - stored
    for name in stored:  # everything stored, acknowledged or not, reaches the watcher through the failover
        assert watcher.wait_for(name, timeout=10), name
    seen = watcher.names()
    assert len(seen) == len(set(seen)), "a duplicate after the watch was resumed on the other core"
    revisions = [int(e["object"]["metadata"]["resourceVersion"]) for e in watcher.events if e["type"] == "ADDED"]
    assert revisions == sorted(revisions)
    watcher.close()


def test_sigkill_an_etcd_member_under_writes(fleet: Fleet, tmp_path: Path) -> None:
    cluster = EtcdCluster(tmp_path / "cluster", 3)
    cluster.start()
    try:
        fleet.servers = cluster.urls
        url = fleet.serve().address
        ns = "e2e-member-" + uuid.uuid4().hex[:6]
        assert call(url, "POST", "/api/v1/namespaces", namespace(ns)).code == 201
        writers = Writers([url], ns)
        writers.start(per_url=4)
        time.sleep(1.5)
        before = len(writers.acked)
        cluster.members[0].kill()  # the first URL: the member Capstan's channel is connected to
        deadline = time.monotonic() + 15  # the client's failover to another member, on a machine other work shares
        while len(writers.acked) - before <= 20 and time.monotonic() < deadline:
            time.sleep(0.2)
        writers.stop()
        writers.check()
        assert len(writers.acked) - before > 20, "writes did not go on with two members of three"
        stored = stored_names(url, ns)
        assert set(writers.acked) <= stored, set(writers.acked) - stored
    finally:
        cluster.stop()


def lease_holder(url: str) -> str:
    answer = call(url, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/capstan-controllers")
    if answer.code == 404:
        return ""
    assert answer.code == 200, answer
    holder: str = answer.body["spec"].get("holderIdentity", "")
    return holder


def gone(url: str, path: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if call(url, "GET", path).code == 404:
            return True
        time.sleep(0.1)
    return False


def test_kill_the_leader_core_and_the_standby_carries_on(fleet: Fleet) -> None:
    leader = fleet.core("a")
    first = fleet.gateway("ga", [leader]).address
    deadline = time.monotonic() + 10
    while not (first_holder := lease_holder(first)):  # the only core: it leads
        assert time.monotonic() < deadline, "the first core did not take the Lease"
        time.sleep(0.1)
    standby: Process = fleet.core("b")
    gateway = fleet.gateway("gb", [standby]).address  # the standby's view: the leader's death is not seen here
    ns = "e2e-lead-" + uuid.uuid4().hex[:6]
    assert call(gateway, "POST", "/api/v1/namespaces", namespace(ns)).code == 201
    for i in range(20):
        assert call(gateway, "POST", CM.format(ns=ns), configmap(f"c{i}")).code == 201
    owner = call(gateway, "POST", CM.format(ns="default"), configmap("owner-" + ns)).body
    dependent = configmap("dependent-" + ns)
    dependent["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                                 "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}]
    assert call(gateway, "POST", CM.format(ns="default"), dependent).code == 201

    assert call(gateway, "DELETE", f"/api/v1/namespaces/{ns}").code == 200
    owner_path = CM.format(ns="default") + "/owner-" + ns
    assert call(gateway, "DELETE", owner_path + "?propagationPolicy=Background").code == 200
    leader.kill()
    killed = time.monotonic()

    while (holder := lease_holder(gateway)) == first_holder:
        assert time.monotonic() - killed < 2 + 2, "the standby did not take the Lease within its duration"
        time.sleep(0.1)
    assert holder
    assert gone(gateway, f"/api/v1/namespaces/{ns}", 15), "the namespace deletion did not finish"
    assert gone(gateway, CM.format(ns="default") + "/dependent-" + ns, 10), "the garbage collector did not go on"
