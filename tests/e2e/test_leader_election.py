"""Leader election between two processes with the official Python client (kubernetes.leaderelection and its
LeaseLock) against a real `capstan serve`: one leader at a time, and failover when the leader dies.

The client's lock reads the Lease, then replaces it with the resourceVersion it read, so when both
candidates race for an expired lease exactly one write wins and the other gets 409 Conflict. Its times go
on the wire as MicroTime ("2024-05-01T12:00:00.123456Z"), which the server keeps to the microsecond. Beside
it, the Lease semantics client-go's LeaseLock relies on are checked directly: holderIdentity,
leaseDurationSeconds, acquireTime/renewTime as MicroTime, leaseTransitions, and the optimistic concurrency.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.e2e.conftest import Capstan, Obj, _Lines

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 3, 2, 1  # the client's smallest valid settings, in seconds
MICRO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")

CANDIDATE = textwrap.dedent(f"""\
    import sys, time
    from kubernetes import config
    from kubernetes.leaderelection import electionconfig, leaderelection
    from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

    kubeconfig, namespace, identity = sys.argv[1:4]
    config.load_kube_config(config_file=kubeconfig)

    def lead():
        print("LEADING", identity, flush=True)
        while True:
            time.sleep(1)

    lock = LeaseLock("capstan-election", namespace, identity)
    election = electionconfig.Config(lock, lease_duration={LEASE_DURATION}, renew_deadline={RENEW_DEADLINE},
                                     retry_period={RETRY_PERIOD}, onstarted_leading=lead,
                                     onstopped_leading=lambda: print("STOPPED", identity, flush=True))
    print("CANDIDATE", identity, flush=True)
    leaderelection.LeaderElection(election).run()
""")


class Candidate:
    def __init__(self, script: Path, capstan: Capstan, namespace: str, identity: str) -> None:
        self.identity = identity
        self.proc = subprocess.Popen(
            [sys.executable, str(script), str(capstan.kubeconfig), namespace, identity],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert self.proc.stdout is not None
        self.out = _Lines(self.proc.stdout)

    def expect(self, word: str, timeout: float) -> bool:
        return self.out.expect(rf"^{word} {self.identity}$", timeout) is not None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def lease(capstan: Capstan, namespace: str) -> Obj:
    code, obj = capstan.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/capstan-election")
    assert code == 200, obj
    return obj


def test_one_leader_at_a_time_and_failover(tmp_path: Path, capstan: Capstan, namespace: str) -> None:
    script = tmp_path / "candidate.py"
    script.write_text(CANDIDATE)
    a = Candidate(script, capstan, namespace, "candidate-a")
    b: Candidate | None = None
    try:
        assert a.expect("LEADING", 20), a.out.rest(0)
        first = lease(capstan, namespace)["spec"]
        assert (first["holderIdentity"], first["leaseDurationSeconds"]) == ("candidate-a", LEASE_DURATION)
        assert MICRO_TIME.fullmatch(first["acquireTime"]) and MICRO_TIME.fullmatch(first["renewTime"]), first

        b = Candidate(script, capstan, namespace, "candidate-b")
        assert b.expect("CANDIDATE", 20)
        # While a renews, b stays a follower for several lease durations.
        assert not b.expect("LEADING", 2 * LEASE_DURATION + 1), "two leaders at once"
        renewed = lease(capstan, namespace)["spec"]
        assert renewed["holderIdentity"] == "candidate-a"
        assert renewed["acquireTime"] == first["acquireTime"] and renewed["renewTime"] > first["renewTime"]

        a.kill()  # the leader dies without releasing the lease
        died = time.monotonic()
        assert b.expect("LEADING", 4 * LEASE_DURATION), "no failover"
        took = time.monotonic() - died
        assert took >= LEASE_DURATION - 1  # not before the dead leader's lease ran out
        taken = lease(capstan, namespace)["spec"]
        assert taken["holderIdentity"] == "candidate-b"
        assert taken["acquireTime"] > renewed["renewTime"]
    finally:
        a.kill()
        if b is not None:
            b.kill()


def test_client_go_lease_semantics(capstan: Capstan, namespace: str) -> None:
    """What client-go's LeaseLock writes and reads: MicroTimes kept to the microsecond, leaseTransitions,
    and an update with a stale resourceVersion refused, so a lost race is noticed."""
    base = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    spec = {"holderIdentity": "node-a_4f1c", "leaseDurationSeconds": 15,
            "acquireTime": "2024-05-01T12:00:00.000001Z", "renewTime": "2024-05-01T12:00:10.123456Z",
            "leaseTransitions": 0}
    created = capstan.create(base, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                    "metadata": {"name": "kube-scheduler"}, "spec": spec})
    assert created["spec"] == spec
    # MicroTime parses as RFC3339Micro: six fractional digits exactly, any offset (stored in UTC).
    short = {**created, "spec": {**spec, "renewTime": "2024-05-01T12:00:30.5Z"}}
    code, refused = capstan.request("PUT", f"{base}/kube-scheduler", short)
    assert (code, refused["reason"]) == (400, "BadRequest")
    taken = {**created, "spec": {**spec, "holderIdentity": "node-b_77aa", "leaseTransitions": 1,
                                 "acquireTime": "2024-05-01T14:00:30.500000+02:00",
                                 "renewTime": "2024-05-01T12:00:30.500000Z"}}
    code, updated = capstan.request("PUT", f"{base}/kube-scheduler", taken)
    assert (code, updated["spec"]) == (200, {**spec, "holderIdentity": "node-b_77aa", "leaseTransitions": 1,
                                             "acquireTime": "2024-05-01T12:00:30.500000Z",
                                             "renewTime": "2024-05-01T12:00:30.500000Z"})
    code, stale = capstan.request("PUT", f"{base}/kube-scheduler", {**created, "spec": {**spec, "leaseTransitions": 1}})
    assert (code, stale["reason"]) == (409, "Conflict")
    code, status = capstan.request("PUT", f"{base}/kube-scheduler", {
        **updated, "spec": {**updated["spec"], "leaseDurationSeconds": 0}})
    assert (code, status["message"]) == (
        422, 'Lease.coordination.k8s.io "kube-scheduler" is invalid: spec.leaseDurationSeconds: Invalid value: 0: '
             "must be greater than 0")
