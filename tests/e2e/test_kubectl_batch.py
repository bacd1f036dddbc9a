"""Jobs, CronJobs and PodDisruptionBudgets with the real kubectl against `capstan serve --controllers=*`, the
test playing the kubelet over HTTP (every Pod of the namespace runs to exit code 0, or is reported Running and
Ready for the budget): `kubectl wait --for=condition=complete` returns for a Job and for one made from a CronJob
with `kubectl create job --from`, and `kubectl get pdb` reports the disruptions allowed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Capstan, Kubectl, serving_with
from tests.e2e.httpkubelet import HttpKubelet

TIMEOUT = "60s"


@pytest.fixture(scope="module")
def controlled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Capstan]:
    yield from serving_with(tmp_path_factory, "capstan-batch", "--controllers=*")


@pytest.fixture
def kc(controlled: Capstan, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    return Kubectl(controlled.kubeconfig, tmp_path_factory.mktemp("kube-cache"))


def test_jobs_complete(kc: Kubectl, controlled: Capstan) -> None:
    ns = "jobs"
    assert kc("create", "namespace", ns).code == 0
    with HttpKubelet(controlled, ns, finish=True):
        ran = kc("create", "job", "pi", "--image=busybox", "-n", ns)
        assert ran.code == 0, ran.err
        ran = kc("wait", "--for=condition=complete", "job/pi", f"--timeout={TIMEOUT}", "-n", ns, timeout=70)
        assert ran.code == 0, ran.err
        got = kc("get", "job", "pi", "-n", ns, "-o", "jsonpath={.status.succeeded}")
        assert got.out == "1"

        ran = kc("create", "cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *", "-n", ns)
        assert ran.code == 0, ran.err
        ran = kc("create", "job", "by-hand", "--from=cronjob/tick", "-n", ns)
        assert ran.code == 0, ran.err
        ran = kc("wait", "--for=condition=complete", "job/by-hand", f"--timeout={TIMEOUT}", "-n", ns, timeout=70)
        assert ran.code == 0, ran.err


def test_pdb_reports_disruptions_allowed(kc: Kubectl, controlled: Capstan) -> None:
    ns = "budgets"
    assert kc("create", "namespace", ns).code == 0
    with HttpKubelet(controlled, ns, finish=False):
        ran = kc("create", "deployment", "web", "--image=nginx", "--replicas=3", "-n", ns)
        assert ran.code == 0, ran.err
        ran = kc("create", "poddisruptionbudget", "web", "--selector=app=web", "--max-unavailable=1", "-n", ns)
        assert ran.code == 0, ran.err
        ran = kc("wait", "--for=jsonpath={.status.disruptionsAllowed}=1", "pdb/web", f"--timeout={TIMEOUT}",
                 "-n", ns, timeout=70)
        assert ran.code == 0, ran.err
        table = kc("get", "pdb", "web", "-n", ns)
        assert table.out.split("\n")[1].split()[:4] == ["web", "N/A", "1", "1"]
