"""--controllers as kube-controller-manager reads it, and the core running exactly the controllers it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.auth.config import INSECURE
from server.startup import controllers
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

DEFAULT = controllers.DEFAULT
ALL = controllers.KNOWN


@pytest.mark.parametrize(("flag", "expected"), [
    ((), DEFAULT),
    (("*",), ALL),
    (("*", "-garbagecollector"), ALL - {"garbagecollector"}),
    (("namespace",), frozenset({"namespace"})),
    (("namespace", "-namespace"), frozenset()),
    (("-namespace", "*"), ALL - {"namespace"}),
    ((" endpoint ", ""), frozenset({"endpoint"})),
])
def test_the_flag_reads_as_kube_controller_managers(flag: tuple[str, ...], expected: frozenset[str]) -> None:
    assert controllers.enabled(flag) == expected


@pytest.mark.parametrize(("flag", "message"), [
    (("deploymentz",), '"deploymentz" is not in the list of known controllers'),
    (("*", "-nope"), '"nope" is not in the list of known controllers'),
])
def test_an_unknown_controller_is_refused_with_kubes_text(flag: tuple[str, ...], message: str) -> None:
    with pytest.raises(controllers.ControllersError, match=message):
        controllers.enabled(flag)


def test_the_default_is_what_makes_the_api_behave() -> None:
    assert {"garbagecollector", "namespace", "serviceaccount", "resourcequota", "endpointslice"} <= DEFAULT


@pytest.mark.parametrize(("names", "running", "absent"), [
    (DEFAULT, {"GarbageCollector", "NamespaceController", "EndpointsController"}, set()),
    (DEFAULT - {"garbagecollector", "endpoint"}, {"NamespaceController"}, {"GarbageCollector", "EndpointsController"}),
    (DEFAULT, set(), {"DeploymentController", "ReplicaSetController", "ReplicationManager"}),  # workloads: named
    (DEFAULT | {"deployment", "replicaset", "replicationcontroller"},
     {"DeploymentController", "ReplicaSetController", "ReplicationManager"}, set()),
    # `*`: every controller in the table is built (those that run only when named are imported then)
    (ALL, {"DeploymentController", "StatefulSetController", "DaemonSetController", "JobController",
             "CronJobController", "PersistentVolumeBinder", "DisruptionController", "TTLAfterFinishedController",
             "NodeLifecycleController", "PodGC", "Scheduler"}, set()),
])
async def test_the_core_runs_the_controllers_named(tmp_path: Path, names: frozenset[str], running: set[str],
                                                   absent: set[str]) -> None:
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, controller_names=names)
    try:
        started = {part.name for part in core.singletons.parts} if core.singletons is not None else set()
        assert running <= started
        assert not absent & started
        assert "PodTerminator" in started  # the kubelets' part is not kube-controller-manager's
        assert all((await core.core.health.run_all()).values())
    finally:
        await core.stop()
        await store.close()
