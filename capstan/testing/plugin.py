"""The pytest plugin `pip install capstan` registers (entry point `pytest11: capstan`): fixtures that give a
controller's tests a Kubernetes API server — a throwaway Capstan per session, or any cluster a kubeconfig names.

Fixtures (every name starts with `capstan_` or `k8s_`, so a project's own `cluster` or `namespace` stays its own):

  capstan_cluster            session: the cluster (a started `capstan serve`, or --capstan-kubeconfig's)
  capstan_kubeconfig         session: the admin kubeconfig's path
  capstan_admin              session: an official-client ApiClient as admin, for session-scoped setup
  capstan_apply              session: apply(manifests, namespace=None, *, force=False), server-side apply
  k8s_client                 function: a fresh kubernetes.client.ApiClient as admin, closed after the test
  k8s_lightkube              function: a lightkube.Client as admin (skips the test when lightkube is missing)
  capstan_namespace          function: a new namespace, deleted after the test
  capstan_service_account    function: make(name, rules=..., namespace=..., cluster_rules=...) -> its kubeconfig
                             and client, with only those RBAC rules; removed after the test
  capstan_user               function: make(name, rules=..., groups=..., namespace=..., cluster_rules=...): the
                             same for a user with a client certificate issued through a CertificateSigningRequest
  capstan_webhooks           function: .validating(handler, rules, ...), .mutating(handler, rules, ...) and
                             .conversion(handler, crd_name): the handler served as a real HTTPS webhook and
                             registered (a webhook configuration, or the CRD's spec.conversion); all of it
                             removed after the test (capstan/testing/registered.py)
  capstan_nodes              function: .stop(node) / .resume(node): a simulated node's kubelet silenced and
                             brought back (capstan/testing/nodes.py); every node stopped is resumed after the test

Options: --capstan-kubeconfig PATH (or CAPSTAN_KUBECONFIG) uses that cluster and starts nothing;
--capstan-insecure starts Capstan with --insecure (plain HTTP, every request allowed); --capstan-serve-arg ARG
(repeatable) passes ARG to `capstan serve` (--capstan-serve-arg=--nodes=3: simulated nodes);
--capstan-start-timeout SECONDS (30).

This module imports only the standard library and pytest at load: it is loaded by every pytest run in an
environment where Capstan is installed, so the server and the kubernetes client load when a fixture asks.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from capstan.testing import server as servers

if TYPE_CHECKING:
    from kubernetes import client

    from capstan.testing.access import Access, Rule
    from capstan.testing.apply import Applier
    from capstan.testing.nodes import Heartbeats
    from capstan.testing.registered import Webhooks

KUBECONFIG_ENV = "CAPSTAN_KUBECONFIG"
STARTED = pytest.StashKey[servers.LocalServer]()


@dataclass(frozen=True)
class CapstanCluster:
    """The cluster the session's tests talk to: its admin kubeconfig and, when the plugin started it, the server."""

    kubeconfig: Path
    server: servers.LocalServer | None  # None: an existing cluster, named by --capstan-kubeconfig
    insecure: bool = False

    def api_client(self) -> client.ApiClient:
        """A new admin client (the caller closes it); kubernetes' global configuration is left alone."""
        from capstan.testing.access import api_client

        return api_client(self.kubeconfig)


class MakeServiceAccount(Protocol):
    def __call__(self, name: str, rules: Sequence[Rule] = (), *, namespace: str | None = None,
                 cluster_rules: Sequence[Rule] = ()) -> Access: ...


class MakeUser(Protocol):
    def __call__(self, name: str, rules: Sequence[Rule] = (), *, groups: Sequence[str] = (),
                 namespace: str | None = None, cluster_rules: Sequence[Rule] = ()) -> Access: ...


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("capstan", "Capstan: a Kubernetes API server for tests")
    group.addoption("--capstan-kubeconfig", metavar="PATH", default=None,
                    help=f"test against the cluster this kubeconfig names instead of starting Capstan"
                         f" (also ${KUBECONFIG_ENV})")
    group.addoption("--capstan-insecure", action="store_true",
                    help="start Capstan with --insecure: plain HTTP, no authentication, every request allowed")
    group.addoption("--capstan-serve-arg", metavar="ARG", action="append", default=[],
                    help="an extra argument for `capstan serve` (repeatable),"
                         " e.g. --capstan-serve-arg=--token-auth-file=t.csv")
    group.addoption("--capstan-start-timeout", metavar="SECONDS", type=float, default=30.0,
                    help="how long `capstan serve` may take to listen (default 30)")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    started = config.stash.get(STARTED, None)
    if started is not None:
        terminalreporter.write_line(f"capstan: served {started.url} after {started.started_in:.2f} s"
                                    f" (data dir {started.data_dir})")


@pytest.fixture(scope="session")
def capstan_cluster(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CapstanCluster]:
    existing = pytestconfig.getoption("capstan_kubeconfig") or os.environ.get(KUBECONFIG_ENV)
    if existing:
        path = Path(existing).expanduser().resolve()
        if not path.is_file():
            raise pytest.UsageError(f"--capstan-kubeconfig / ${KUBECONFIG_ENV}: no file {path}")
        yield CapstanCluster(path, None)
        return
    insecure = bool(pytestconfig.getoption("capstan_insecure"))
    try:
        started = servers.start(tmp_path_factory.mktemp("capstan") / "data", insecure=insecure,
                                extra=tuple(pytestconfig.getoption("capstan_serve_arg")),
                                timeout=pytestconfig.getoption("capstan_start_timeout"))
    except servers.ServerFailed as err:
        pytest.fail(str(err), pytrace=False)
    pytestconfig.stash[STARTED] = started
    try:
        yield CapstanCluster(started.kubeconfig, started, insecure)
    finally:
        started.stop()


@pytest.fixture
def capstan_nodes(capstan_admin: client.ApiClient) -> Iterator[Heartbeats]:
    from capstan.testing.nodes import Heartbeats

    heartbeats = Heartbeats(capstan_admin)
    try:
        yield heartbeats
    finally:
        heartbeats.resume_all()


@pytest.fixture(scope="session")
def capstan_kubeconfig(capstan_cluster: CapstanCluster) -> Path:
    return capstan_cluster.kubeconfig


@pytest.fixture(scope="session")
def capstan_admin(capstan_cluster: CapstanCluster) -> Iterator[client.ApiClient]:
    api = capstan_cluster.api_client()
    try:
        yield api
    finally:
        api.close()  # type: ignore[no-untyped-call]


@pytest.fixture(scope="session")
def capstan_apply(capstan_admin: client.ApiClient) -> Applier:
    from capstan.testing.apply import Applier

    return Applier(capstan_admin)


@pytest.fixture
def k8s_client(capstan_cluster: CapstanCluster) -> Iterator[client.ApiClient]:
    api = capstan_cluster.api_client()
    try:
        yield api
    finally:
        api.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def k8s_lightkube(capstan_kubeconfig: Path) -> Any:
    lightkube = pytest.importorskip("lightkube")
    return lightkube.Client(config=lightkube.KubeConfig.from_file(capstan_kubeconfig))


@pytest.fixture
def capstan_namespace(request: pytest.FixtureRequest, capstan_admin: client.ApiClient) -> Iterator[str]:
    from capstan.testing.access import create, delete, namespace_name

    path = create(capstan_admin, "/api/v1/namespaces", {"metadata": {"name": namespace_name(request.node.name)}})
    try:
        yield path.rsplit("/", 1)[1]
    finally:
        delete(capstan_admin, [path])  # its contents go with it; the test does not wait for that


@pytest.fixture
def capstan_service_account(request: pytest.FixtureRequest, capstan_cluster: CapstanCluster,
                            capstan_admin: client.ApiClient,
                            tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeServiceAccount]:
    from capstan.testing.access import delete, service_account

    _needs_authorization(capstan_cluster)
    made: list[Access] = []
    directory = tmp_path_factory.mktemp("capstan-accounts")

    def make(name: str, rules: Sequence[Rule] = (), *, namespace: str | None = None,
             cluster_rules: Sequence[Rule] = ()) -> Access:
        where = namespace or request.getfixturevalue("capstan_namespace")
        access = service_account(capstan_admin, capstan_cluster.kubeconfig, directory, name, namespace=where,
                                 rules=rules, cluster_rules=cluster_rules)
        made.append(access)
        return access

    try:
        yield make
    finally:
        for access in reversed(made):
            delete(capstan_admin, access.made)


@pytest.fixture
def capstan_user(request: pytest.FixtureRequest, capstan_cluster: CapstanCluster, capstan_admin: client.ApiClient,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeUser]:
    from capstan.testing.access import delete, user

    _needs_authorization(capstan_cluster)
    made: list[Access] = []
    directory = tmp_path_factory.mktemp("capstan-users")

    def make(name: str, rules: Sequence[Rule] = (), *, groups: Sequence[str] = (), namespace: str | None = None,
             cluster_rules: Sequence[Rule] = ()) -> Access:
        where = namespace or (request.getfixturevalue("capstan_namespace") if rules else None)
        access = user(capstan_admin, capstan_cluster.kubeconfig, directory, name, groups=groups, namespace=where,
                      rules=rules, cluster_rules=cluster_rules)
        made.append(access)
        return access

    try:
        yield make
    finally:
        for access in reversed(made):
            delete(capstan_admin, access.made)


def _needs_authorization(cluster: CapstanCluster) -> None:
    if cluster.insecure:
        pytest.skip("--capstan-insecure allows every request: RBAC cannot be tested")


@pytest.fixture
def capstan_webhooks(capstan_admin: client.ApiClient) -> Iterator[Webhooks]:
    from capstan.testing.registered import Webhooks

    hooks = Webhooks(capstan_admin)
    try:
        yield hooks
    finally:
        hooks.close()
