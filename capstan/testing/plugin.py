"""The pytest plugin `pip install capstan-apiserver` registers (entry point `pytest11: capstan`): fixtures that give a
controller's tests a Kubernetes API server — a throwaway Capstan per session (or per test, when asked), or any
cluster a kubeconfig names.

Fixtures (every name starts with `capstan_` or `k8s_`, so a project's own `cluster` or `namespace` stays its own):

  capstan_cluster            session: the cluster (a started `capstan serve`, or --capstan-kubeconfig's)
  capstan_kubeconfig         session: the admin kubeconfig's path
  capstan_admin              session: an official-client ApiClient as admin, for session-scoped setup
  capstan_apply              session: apply(manifests, namespace=None, *, force=False), server-side apply
  capstan_test_cluster       function: the cluster this test talks to: the session's, or a server of the test's
                             own (marker `capstan(fresh=True, serve_args=[...], controllers="...")`,
                             --capstan-fresh); every function fixture below talks to it
  k8s_client                 function: a fresh kubernetes.client.ApiClient as admin, closed after the test
  k8s_lightkube              function: a lightkube.Client as admin (skips the test when lightkube is missing)
  k8s_async_client           async, function: a kubernetes_asyncio ApiClient as admin (skips when missing)
  k8s_lightkube_async        async, function: a lightkube.AsyncClient as admin (skips when missing)
  k8s_kr8s                   async, function: a kr8s.asyncio Api as admin (skips when missing)
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
  capstan_requests           function: the requests made during the test, from the server's audit log, with
                             .find(**fields), .assert_called(times=None, **fields), .assert_not_called(**fields)
                             (capstan/testing/requestlog.py)
  capstan_faults             function: .inject(code, verb=..., resource=..., name=..., count=..., delay=...) and
                             .drop_watches(...): the server answers chosen requests with kube's failures and ends
                             open watches (capstan/testing/faults.py); every rule removed after the test

Options: --capstan-kubeconfig PATH (or CAPSTAN_KUBECONFIG) uses that cluster and starts nothing;
--capstan-insecure starts Capstan with --insecure (plain HTTP, every request allowed); --capstan-serve-arg ARG
(repeatable; ini `capstan_serve_args`) passes ARG to `capstan serve` (--capstan-serve-arg=--nodes=3:
simulated nodes); --capstan-controllers NAMES (ini `capstan_controllers`) its --controllers; --capstan-fresh
starts a server per test; --capstan-start-timeout SECONDS (30). The servers the plugin starts audit every
request (for capstan_requests) and serve fault injection (--fault-injection, for capstan_faults).

This module imports only the standard library and pytest (and pytest-asyncio, when installed) at load: it is
loaded by every pytest run in an environment where Capstan is installed, so the server and the kubernetes client
load when a fixture asks.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from capstan.testing import server as servers

try:
    import pytest_asyncio
except ImportError:  # the async fixtures then skip the tests that ask for them
    pytest_asyncio = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from kubernetes import client

    from capstan.testing.access import Access, Rule
    from capstan.testing.apply import Applier, Manifests
    from capstan.testing.faults import Faults
    from capstan.testing.nodes import Heartbeats
    from capstan.testing.registered import Webhooks
    from capstan.testing.requestlog import RequestLog
    from capstan.testing.rest import Obj

KUBECONFIG_ENV = "CAPSTAN_KUBECONFIG"
STARTED = pytest.StashKey[servers.LocalServer]()
OWN_STARTED = pytest.StashKey[list[float]]()  # the start times of the servers started for single tests
TEST_FAULTS = pytest.StashKey["Faults"]()  # the test's fault rules, removed before its fixtures clean up
MARKER = "capstan"


@dataclass(frozen=True)
class CapstanCluster:
    """The cluster the session's tests talk to: its admin kubeconfig and, when the plugin started it, the server."""

    kubeconfig: Path
    server: servers.LocalServer | None  # None: an existing cluster, named by --capstan-kubeconfig
    insecure: bool = False
    own: bool = False  # started for one test (capstan_test_cluster), stopped after it

    def api_client(self) -> client.ApiClient:
        """A new admin client (the caller closes it); kubernetes' global configuration is left alone."""
        from capstan.testing.access import api_client

        return api_client(self.kubeconfig)

    def plugin_client(self) -> client.ApiClient:
        """A new admin client whose requests the request log leaves out: the plugin's own setup and cleanup."""
        from capstan.testing.requestlog import PLUGIN_AGENT

        api = self.api_client()
        api.user_agent = PLUGIN_AGENT
        return api

    def apply(self, manifests: Manifests, namespace: str | None = None, *, force: bool = False) -> list[Obj]:
        """capstan_apply's server-side apply, on this cluster (for a test with a server of its own)."""
        from capstan.testing.apply import Applier

        with self.plugin_client() as api:
            return Applier(api)(manifests, namespace, force=force)


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
    group.addoption("--capstan-controllers", metavar="NAMES", default=None,
                    help="the controllers the started servers run, as kube-controller-manager's --controllers"
                         " ('*' every one, NAME on, -NAME off)")
    group.addoption("--capstan-fresh", action="store_true",
                    help="start a server for every test instead of one for the session")
    group.addoption("--capstan-start-timeout", metavar="SECONDS", type=float, default=30.0,
                    help="how long `capstan serve` may take to listen (default 30)")
    parser.addini("capstan_serve_args", type="args", default=[],
                  help="extra arguments for every `capstan serve` the plugin starts")
    parser.addini("capstan_controllers", default="",
                  help="the controllers the started servers run (--controllers), as --capstan-controllers")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(fresh=False, serve_args=(), controllers=None): the test gets a Capstan of its own,"
                   " started with these extra `capstan serve` arguments and --controllers (any of them asks for"
                   " a server of the test's own)")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    started = config.stash.get(STARTED, None)
    if started is not None:
        terminalreporter.write_line(f"capstan: served {started.url} after {started.started_in:.2f} s"
                                    f" (data dir {started.data_dir})")
    own = config.stash.get(OWN_STARTED, [])
    if own:
        terminalreporter.write_line(f"capstan: started {len(own)} server(s) for single tests,"
                                    f" {sum(own) / len(own):.2f} s each on average")


def _existing(config: pytest.Config) -> Path | None:
    existing = config.getoption("capstan_kubeconfig") or os.environ.get(KUBECONFIG_ENV)
    if not existing:
        return None
    path = Path(existing).expanduser().resolve()
    if not path.is_file():
        raise pytest.UsageError(f"--capstan-kubeconfig / ${KUBECONFIG_ENV}: no file {path}")
    return path


def _serve_args(config: pytest.Config, *, controllers: str | None = None, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The session's arguments (ini, then --capstan-controllers, then --capstan-serve-arg), then a test's own."""
    chosen = controllers if controllers is not None else (config.getoption("capstan_controllers")
                                                          or config.getini("capstan_controllers"))
    return (*config.getini("capstan_serve_args"), *([f"--controllers={chosen}"] if chosen else []),
            *config.getoption("capstan_serve_arg"), "--fault-injection", *extra)


def _start(config: pytest.Config, data_dir: Path, args: tuple[str, ...]) -> servers.LocalServer:
    from capstan.testing.requestlog import AUDIT_POLICY

    try:
        return servers.start(data_dir, insecure=bool(config.getoption("capstan_insecure")), extra=args,
                             timeout=config.getoption("capstan_start_timeout"), audit_policy=AUDIT_POLICY)
    except servers.ServerFailed as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="session")
def capstan_cluster(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CapstanCluster]:
    existing = _existing(pytestconfig)
    if existing is not None:
        yield CapstanCluster(existing, None)
        return
    started = _start(pytestconfig, tmp_path_factory.mktemp("capstan") / "data", _serve_args(pytestconfig))
    pytestconfig.stash[STARTED] = started
    try:
        yield CapstanCluster(started.kubeconfig, started, bool(pytestconfig.getoption("capstan_insecure")))
    finally:
        started.stop()


def _own_server(request: pytest.FixtureRequest) -> tuple[str, ...] | None:
    """The arguments of the server this test asks for itself; None: the session's serves it."""
    config = request.config
    marker = request.node.get_closest_marker(MARKER)
    kwargs = dict(marker.kwargs) if marker is not None else {}
    unknown = sorted(set(kwargs) - {"fresh", "serve_args", "controllers"})
    if unknown or (marker is not None and marker.args):
        given = ", ".join(unknown) if unknown else repr(marker.args if marker is not None else ())
        raise pytest.UsageError(f"@pytest.mark.{MARKER} takes fresh=, serve_args= and controllers=; got {given}")
    serve_args = tuple(kwargs.get("serve_args", ()))
    controllers = kwargs.get("controllers")
    if not (kwargs.get("fresh") or serve_args or controllers is not None or config.getoption("capstan_fresh")):
        return None
    return _serve_args(config, controllers=controllers, extra=serve_args)


@pytest.fixture
def capstan_test_cluster(request: pytest.FixtureRequest,
                         tmp_path_factory: pytest.TempPathFactory) -> Iterator[CapstanCluster]:
    args = _own_server(request)
    if args is None:
        yield request.getfixturevalue("capstan_cluster")
        return
    if _existing(request.config) is not None:
        pytest.skip("the test asks for a Capstan of its own; --capstan-kubeconfig names an existing cluster")
    started = _start(request.config, tmp_path_factory.mktemp("capstan-test") / "data", args)
    request.config.stash.setdefault(OWN_STARTED, []).append(started.started_in)
    try:
        yield CapstanCluster(started.kubeconfig, started, bool(request.config.getoption("capstan_insecure")),
                             own=True)
    finally:
        started.stop()


@pytest.fixture
def capstan_nodes(request: pytest.FixtureRequest, _capstan_test_admin: client.ApiClient) -> Iterator[Heartbeats]:
    from capstan.testing.nodes import Heartbeats

    heartbeats = Heartbeats(_capstan_test_admin)
    try:
        yield heartbeats
    finally:
        _calm(request)
        heartbeats.resume_all()


@pytest.fixture(scope="session")
def capstan_kubeconfig(capstan_cluster: CapstanCluster) -> Path:
    return capstan_cluster.kubeconfig


def _closing(api: client.ApiClient) -> Iterator[client.ApiClient]:
    """A fixture's client, closed after the test (or the session) that used it."""
    try:
        yield api
    finally:
        api.close()  # type: ignore[no-untyped-call]


@pytest.fixture(scope="session")
def capstan_admin(capstan_cluster: CapstanCluster) -> Iterator[client.ApiClient]:
    yield from _closing(capstan_cluster.api_client())


@pytest.fixture(scope="session")
def _capstan_plugin_admin(capstan_cluster: CapstanCluster) -> Iterator[client.ApiClient]:
    """The session's admin client of the plugin's own fixtures (left out of the request log)."""
    yield from _closing(capstan_cluster.plugin_client())


@pytest.fixture
def _capstan_test_admin(request: pytest.FixtureRequest,
                        capstan_test_cluster: CapstanCluster) -> Iterator[client.ApiClient]:
    """The plugin's admin client on the test's cluster."""
    if not capstan_test_cluster.own:
        yield request.getfixturevalue("_capstan_plugin_admin")
        return
    yield from _closing(capstan_test_cluster.plugin_client())


@pytest.fixture(scope="session")
def capstan_apply(_capstan_plugin_admin: client.ApiClient) -> Applier:
    from capstan.testing.apply import Applier

    return Applier(_capstan_plugin_admin)


@pytest.fixture
def k8s_client(capstan_test_cluster: CapstanCluster) -> Iterator[client.ApiClient]:
    yield from _closing(capstan_test_cluster.api_client())


@pytest.fixture
def k8s_lightkube(capstan_test_cluster: CapstanCluster) -> Any:
    lightkube = pytest.importorskip("lightkube")
    return lightkube.Client(config=lightkube.KubeConfig.from_file(capstan_test_cluster.kubeconfig))


def _async_fixture(make: Callable[..., AsyncIterator[Any]]) -> Any:
    """An async generator fixture on pytest-asyncio (in its strict mode too); without it, a fixture that skips."""
    if pytest_asyncio is not None:
        return pytest_asyncio.fixture(make)

    def skipped() -> None:
        pytest.skip(f"{make.__name__} is an async fixture: it needs pytest-asyncio")

    skipped.__name__ = make.__name__
    return pytest.fixture(skipped)


@_async_fixture
async def k8s_async_client(capstan_test_cluster: CapstanCluster) -> AsyncIterator[Any]:
    """A kubernetes_asyncio ApiClient as admin, closed after the test."""
    pytest.importorskip("kubernetes_asyncio")
    from kubernetes_asyncio import client as async_client
    from kubernetes_asyncio import config as async_config

    configuration = async_client.Configuration()
    await async_config.load_kube_config(config_file=str(capstan_test_cluster.kubeconfig),
                                        client_configuration=configuration, persist_config=False)
    async with async_client.ApiClient(configuration) as api:
        yield api


@_async_fixture
async def k8s_lightkube_async(capstan_test_cluster: CapstanCluster) -> AsyncIterator[Any]:
    """A lightkube.AsyncClient as admin, closed after the test."""
    lightkube = pytest.importorskip("lightkube")
    api = lightkube.AsyncClient(config=lightkube.KubeConfig.from_file(capstan_test_cluster.kubeconfig))
    try:
        yield api
    finally:
        await api.close()


@_async_fixture
async def k8s_kr8s(capstan_test_cluster: CapstanCluster) -> AsyncIterator[Any]:
    """A kr8s.asyncio Api as admin (kr8s keeps one per loop and arguments); its connections closed after the test."""
    kr8s = pytest.importorskip("kr8s.asyncio")
    api = await kr8s.api(kubeconfig=str(capstan_test_cluster.kubeconfig))
    try:
        yield api
    finally:
        session = getattr(api, "_session", None)  # kr8s has no public close: its httpx client is closed here
        if session is not None:
            await session.aclose()


def _calm(request: pytest.FixtureRequest) -> None:
    """Removes the test's fault rules before a fixture cleans up, so its deletes are not answered by them."""
    faults = request.node.stash.get(TEST_FAULTS, None)
    if faults is not None:
        faults.clear()
        del request.node.stash[TEST_FAULTS]


@pytest.fixture
def capstan_namespace(request: pytest.FixtureRequest, _capstan_test_admin: client.ApiClient) -> Iterator[str]:
    from capstan.testing.access import create, delete, namespace_name

    path = create(_capstan_test_admin, "/api/v1/namespaces",
                  {"metadata": {"name": namespace_name(request.node.name)}})
    try:
        yield path.rsplit("/", 1)[1]
    finally:
        _calm(request)
        delete(_capstan_test_admin, [path])  # its contents go with it; the test does not wait for that


@pytest.fixture
def capstan_service_account(request: pytest.FixtureRequest, capstan_test_cluster: CapstanCluster,
                            _capstan_test_admin: client.ApiClient,
                            tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeServiceAccount]:
    from capstan.testing.access import delete, service_account

    _needs_authorization(capstan_test_cluster)
    made: list[Access] = []
    directory = tmp_path_factory.mktemp("capstan-accounts")

    def make(name: str, rules: Sequence[Rule] = (), *, namespace: str | None = None,
             cluster_rules: Sequence[Rule] = ()) -> Access:
        where = namespace or request.getfixturevalue("capstan_namespace")
        access = service_account(_capstan_test_admin, capstan_test_cluster.kubeconfig, directory, name,
                                 namespace=where, rules=rules, cluster_rules=cluster_rules)
        made.append(access)
        return access

    try:
        yield make
    finally:
        _calm(request)
        for access in reversed(made):
            delete(_capstan_test_admin, access.made)


@pytest.fixture
def capstan_user(request: pytest.FixtureRequest, capstan_test_cluster: CapstanCluster,
                 _capstan_test_admin: client.ApiClient,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeUser]:
    from capstan.testing.access import delete, user

    _needs_authorization(capstan_test_cluster)
    made: list[Access] = []
    directory = tmp_path_factory.mktemp("capstan-users")

    def make(name: str, rules: Sequence[Rule] = (), *, groups: Sequence[str] = (), namespace: str | None = None,
             cluster_rules: Sequence[Rule] = ()) -> Access:
        where = namespace or (request.getfixturevalue("capstan_namespace") if rules else None)
        access = user(_capstan_test_admin, capstan_test_cluster.kubeconfig, directory, name, groups=groups,
                      namespace=where, rules=rules, cluster_rules=cluster_rules)
        made.append(access)
        return access

    try:
        yield make
    finally:
        _calm(request)
        for access in reversed(made):
            delete(_capstan_test_admin, access.made)


def _needs_authorization(cluster: CapstanCluster) -> None:
    if cluster.insecure:
        pytest.skip("--capstan-insecure allows every request: RBAC cannot be tested")


@pytest.fixture
def capstan_webhooks(request: pytest.FixtureRequest, _capstan_test_admin: client.ApiClient) -> Iterator[Webhooks]:
    from capstan.testing.registered import Webhooks

    hooks = Webhooks(_capstan_test_admin)
    try:
        yield hooks
    finally:
        _calm(request)
        hooks.close()


def _started(cluster: CapstanCluster, what: str) -> servers.LocalServer:
    if cluster.server is None:
        pytest.skip(f"{what} needs the Capstan the plugin starts; --capstan-kubeconfig names an existing cluster")
    return cluster.server


@pytest.fixture
def capstan_requests(capstan_test_cluster: CapstanCluster) -> RequestLog:
    from capstan.testing.requestlog import RequestLog

    server = _started(capstan_test_cluster, "capstan_requests")
    if server.audit_log is None or capstan_test_cluster.insecure:  # --insecure runs no audit
        pytest.skip("capstan_requests reads the audit log, which a server started with --capstan-insecure"
                    " does not write")
    return RequestLog(server.audit_log)


@pytest.fixture
def capstan_faults(request: pytest.FixtureRequest, capstan_test_cluster: CapstanCluster,
                   _capstan_test_admin: client.ApiClient) -> Iterator[Faults]:
    from capstan.testing.faults import Faults

    _started(capstan_test_cluster, "capstan_faults")
    faults = request.node.stash[TEST_FAULTS] = Faults(_capstan_test_admin)
    try:
        yield faults
    finally:
        _calm(request)
