"""The `capstan` command.

  capstan serve      store, gRPC core and HTTP gateway in one process (the default way to run)
  capstan core       store and gRPC core only, for gateways in other processes
  capstan gateway    an HTTP gateway in front of a core reached over gRPC (--core HOST:PORT)
  capstan kubeconfig a kubeconfig for the running server, for kubectl and client libraries
  capstan console    a one-time login URL of the web console (/console/) for the admin
  capstan nodes      simulated nodes (kubelets without containers) as a client of any API server
  capstan kube-apiserver  `capstan serve` behind kube-apiserver 1.28's command line (capstan/cli/kubeapiserver.py)
  capstan envtest-assets DIR  a KUBEBUILDER_ASSETS directory whose kube-apiserver is Capstan (envtest.py)
  capstan snapshot   save (while serving), status and restore snapshots of the LMDB store (snapshot.py)
  capstan check      verify every stored value; capstan defrag: compact the stopped store's file

Secure by default, with kube-apiserver's flags: HTTPS on --secure-port, TLS gRPC on --grpc-port (and mutual
TLS on --grpc-mtls-port), certificates from --cert-dir (generated on first start, capstan/cli/pki.py).
`--insecure` is the throwaway mode: plain HTTP and gRPC that trust every caller, on loopback only.

Every server exits cleanly on SIGTERM or SIGINT: listeners stop first, then
acknowledged writes are committed and LMDB is closed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import os
import signal
import ssl
import sys
from collections.abc import Sequence
from pathlib import Path

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.registry import Collector

from capstan.cli import allocator, eventloop, gcpolicy, logs, pki, tools, workerpeers, workers
from capstan.cli import kubeconfig as kubeconfigs
from capstan.cli import nodes as simulated
from capstan.cli.inprocess import InProcessClient
from capstan.cli.tls import ServingFiles, front_proxy_credentials, server_context
from gateway import hostcheck
from gateway import metrics as gateway_metrics
from gateway.app import build_app, start_http
from gateway.client import CoreClient
from gateway.connections import IDLE_TIMEOUT, READ_HEADER_TIMEOUT, ConnectionLimits, raise_nofile_limit
from gateway.health import HEALTH_KEY
from gateway.health_listener import HealthListener
from gateway.transport.grpc import GrpcClient
from gateway.transport.pool import PoolClient
from server import admission
from server.admission import podsecurity
from server.auth.config import DEFAULT_ISSUER, INSECURE, SecurityConfig
from server.callouts import metrics as webhook_metrics
from server.kinds.services import DEFAULT_SERVICE_CLUSTER_IP_RANGE, Allocator
from server.machinery import apimetrics, tracing
from server.machinery.aggregation import ProxyClientCertificate
from server.machinery.faults import Faults
from server.machinery.limits.config import DEFAULT, Limits
from server.machinery.limits.limiter import Limiter
from server.objects import health
from server.objects.storageobjects import StorageObjectsCounter
from server.objects.watchcache import DISABLED, CacheConfig
from server.runtime.election import LEASE_NAME, ElectionConfig
from server.service.grpc_server import MAX_STREAMS_PER_CONNECTION, GrpcLimits, GrpcTls
from server.startup import apienablement, controllers
from server.startup.app import RunningCore, start_core
from storage import StorageError, Store, StoreOptions, files
from storage.etcd import DEFAULT_PREFIX as ETCD_PREFIX
from storage.etcd import EtcdConfig, EtcdStore
from storage.lmdb import LmdbStore, datalock
from storage.lmdb.datalock import DataLock
from storage.lmdb.peers import Peers
from storage.options import DEFAULT_QUOTA_BYTES

log = logging.getLogger("capstan")

ENDPOINTS_FILE = kubeconfigs.ENDPOINTS_FILE
AUTHORIZATION_MODES = ("Node", "RBAC", "Webhook", "AlwaysAllow", "AlwaysDeny")
INSECURE_WARNING = (
    "\n*** capstan is running with --insecure: plain HTTP and gRPC, no authentication, no authorization. ***"
    "\n*** Anyone who reaches %s can read every Secret and write anything. For tests and demos only.  ***"
)


class UsageError(Exception):
    """A command line that parses but cannot be served (exit 1 with its message)."""


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def _cidr(text: str) -> str:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _ip(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an IP address") from None


def _modes(text: str) -> tuple[str, ...]:
    modes = tuple(mode.strip() for mode in text.split(",") if mode.strip())
    unknown = [mode for mode in modes if mode not in AUTHORIZATION_MODES]
    if unknown or not modes:
        raise argparse.ArgumentTypeError(
            f"authorization-mode {','.join(unknown) or text!r} is not a valid mode ({', '.join(AUTHORIZATION_MODES)})")
    return modes


def _go_duration(text: str) -> float:
    """A Go duration flag (kube's 2m0s, 30s, 5m) in seconds."""
    from server.machinery.codec.gotime import TimeError, parse_duration

    try:
        return parse_duration(text) / 1e9
    except TimeError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _claim(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, not {text!r}")
    return key, value


def _cores(text: str) -> tuple[str, ...]:
    cores = _names(text)
    if not cores:
        raise argparse.ArgumentTypeError("expected HOST:PORT[,HOST:PORT...]")
    return cores


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _controllers(text: str) -> tuple[str, ...]:
    names = _names(text)
    try:
        controllers.enabled(names)
    except controllers.ControllersError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return names


def _workers(text: str) -> int:
    if text == "auto":
        return workers.default_workers()
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of workers or auto, not {text!r}")
    return int(text)


def _store_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workers", type=_workers, default="auto", metavar="N",
        help=f"serving processes sharing the ports and the store (default auto: the usable cores, at most "
        f"{workers.MAX_WORKERS}; 1: this process alone serves); a parent process supervises them "
        "(capstan/cli/workers.py)",
    )
    parser.add_argument("--data-dir", type=Path, default=Path("data"), help="data directory (default ./data)")
    parser.add_argument(
        "--sync", type=_bool, default=True,
        help="fsync every acknowledged write (default true). false is UNSAFE: for tests only,"
        " a crash may lose acknowledged writes",
    )
    parser.add_argument(
        "--enable-admission-plugins", type=_names, default=[], metavar="NAMES",
        help="admission plugins to enable beside kube 1.28's defaults (comma-separated kube plugin names; the"
        " order is always kube's)",
    )
    parser.add_argument(
        "--disable-admission-plugins", type=_names, default=[], metavar="NAMES",
        help="admission plugins to disable, even those on by default (comma-separated kube plugin names)",
    )
    parser.add_argument(
        "--event-ttl", type=_go_duration, default=3600.0, metavar="DURATION",
        help="how long an Event is kept after its last write, as kube-apiserver's flag (default 1h0m0s; 0 keeps "
        "Events for ever)",
    )
    parser.add_argument(
        "--admission-control-config-file", type=Path, default=None, metavar="FILE",
        help="kube's AdmissionConfiguration (apiserver.config.k8s.io/v1): the PodSecurity plugin's"
        " PodSecurityConfiguration is read from it; other plugins' configurations are ignored",
    )
    parser.add_argument(
        "--controllers", type=_controllers, default=(), metavar="NAMES",
        help="the controllers to run, as kube-controller-manager's flag: '*' runs every one, NAME turns one on,"
        " -NAME off (default: the controllers that make the API behave as a cluster's:"
        f" {', '.join(sorted(controllers.DEFAULT))}; known: {', '.join(c.name for c in controllers.CONTROLLERS)})",
    )
    parser.add_argument(
        "--cluster-signing-cert-file", type=Path, default=None, metavar="FILE",
        help="the CA certificate (PEM) the csrsigning controller signs approved CertificateSigningRequests with, as"
        " kube-controller-manager's flag (default: the cert dir's CA); with --cluster-signing-key-file",
    )
    parser.add_argument("--cluster-signing-key-file", type=Path, default=None, metavar="FILE",
                        help="that CA's private key (PEM), as kube-controller-manager's flag")
    parser.add_argument(
        "--watch-cache", type=_bool, default=None,
        help="serve LISTs and GETs with resourceVersion 0 or not older than N, and watches' initial state, from"
        " memory kept current by the store's watch, as kube-apiserver's flag (default true)",
    )
    parser.add_argument(
        "--quota-backend-bytes", type=int, default=DEFAULT_QUOTA_BYTES, metavar="BYTES",
        help=f"the most data the store holds, as etcd's flag (default {DEFAULT_QUOTA_BYTES}, 2 GiB; 0: the default;"
        " negative: no quota). Past it creates and updates answer 507 InsufficientStorage; reads and deletes"
        " still work, and /readyz's etcd-quota check fails",
    )
    parser.add_argument(
        "--encryption-provider-config", type=Path, metavar="FILE",
        help="an EncryptionConfiguration (apiserver.config.k8s.io/v1), as kube-apiserver's flag: the providers"
        " (identity, aescbc, aesgcm, secretbox, kms v2) that encrypt each listed resource's values in the store,"
        " in kube's stored formats (docs/security.md#encryption-at-rest)")
    parser.add_argument(
        "--encryption-provider-config-automatic-reload", type=_bool, nargs="?", const=True, default=False,
        metavar="BOOL",
        help="re-read --encryption-provider-config when it changes and use it once it validates and its KMS"
        " plugins answer (default false); /healthz's kms-providers check is then always there")
    etcd = parser.add_argument_group(
        "etcd (kube-apiserver's flags; without --etcd-servers the store is LMDB in --data-dir)")
    etcd.add_argument("--etcd-servers", type=_names, default=(), metavar="URL[,URL...]",
                      help="etcd members' client URLs (http:// or https://): store everything in that cluster, "
                      "shared with any other Capstan core on it")
    etcd.add_argument("--etcd-prefix", default=ETCD_PREFIX,
                      help=f"the prefix of every key in etcd (default {ETCD_PREFIX}); Capstans sharing a cluster "
                      "use prefixes that are not prefixes of one another")
    etcd.add_argument("--etcd-cafile", type=Path, help="CA bundle that verifies the etcd servers' certificates")
    etcd.add_argument("--etcd-certfile", type=Path, help="client certificate presented to etcd")
    etcd.add_argument("--etcd-keyfile", type=Path, help="the client certificate's private key")


async def _open_store(args: argparse.Namespace) -> tuple[Store, DataLock | None]:
    """The data directory and its store, private to this user (storage/files.py), the default cert dir too.

    With --etcd-servers the store is that etcd cluster (the data directory keeps only the certificates
    and the endpoints file); otherwise LMDB in the data directory, locked for this server (and its workers)
    for as long as it runs (storage/lmdb/datalock.py): a second server on it is refused.
    """
    files.private_dir(args.data_dir)
    if (args.data_dir / "pki").is_dir():
        files.private_dir(args.data_dir / "pki")
    quota = args.quota_backend_bytes or DEFAULT_QUOTA_BYTES  # etcd's reading of the flag: 0 is the default
    options = StoreOptions(sync=args.sync, quota_bytes=quota if quota > 0 else None)
    encryption = None
    if args.encryption_provider_config_automatic_reload and args.encryption_provider_config is None:
        raise UsageError("--encryption-provider-config-automatic-reload must be set with"
                         " --encryption-provider-config")  # kube's EtcdOptions.Validate
    if args.encryption_provider_config is not None:
        from storage.encryption import ConfigError as EncryptionConfigError  # its ciphers: only when configured
        from storage.encryption import Encryption

        try:
            encryption = await Encryption.open(args.encryption_provider_config,
                                               reload=args.encryption_provider_config_automatic_reload)
        except EncryptionConfigError as err:
            raise UsageError(str(err)) from None
    root = b""  # what AES-GCM and KMS v2 authenticate: the key as the backend holds it
    store: Store
    lock: DataLock | None = None
    try:
        if args.etcd_servers:
            config = EtcdConfig(servers=args.etcd_servers, prefix=args.etcd_prefix, cafile=args.etcd_cafile,
                                certfile=args.etcd_certfile, keyfile=args.etcd_keyfile)
            store = await EtcdStore.open(config, options)
            root = config.root
        else:
            lock = datalock.acquire(args.data_dir / "lmdb", os.environ)
            try:
                store = await LmdbStore.open(args.data_dir / "lmdb", options, peers=Peers.from_environ(os.environ))
            except BaseException:
                lock.release()
                raise
    except BaseException:
        if encryption is not None:
            await encryption.close()
        raise
    if encryption is None:
        return store, lock
    from storage.encryption import EncryptedStore

    return EncryptedStore(store, encryption, context_root=root), lock


def _store_checks(store: Store, args: argparse.Namespace) -> dict[str, health.Check]:
    """kube's `kms-providers` check when KMS v2 providers are configured or the configuration reloads."""
    if args.encryption_provider_config is None:
        return {}
    from storage.encryption import EncryptedStore

    assert isinstance(store, EncryptedStore)
    encryption = store.encryption
    if encryption.kms_providers() or args.encryption_provider_config_automatic_reload:
        return {"kms-providers": encryption.kms_health}
    return {}


def _core_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--feature-gates", action="append", default=[], metavar="KEY=BOOL[,KEY=BOOL...]",
        help="kube-apiserver 1.28's feature gates (ValidatingAdmissionPolicy=true serves and runs "
        "ValidatingAdmissionPolicies with --runtime-config; WatchList=true lets a watch ask for sendInitialEvents); "
        "an unknown gate is an error, as kube's",
    )
    parser.add_argument(
        "--runtime-config", action="append", default=[], metavar="GROUP/VERSION[=BOOL][,...]",
        help="group versions to serve beyond the defaults, as kube-apiserver's flag "
        "(admissionregistration.k8s.io/v1beta1=true, admissionregistration.k8s.io/v1alpha1=true, api/beta, "
        "api/alpha, api/all)",
    )
    parser.add_argument(
        "--advertise-address", type=_ip, default=None, metavar="IP",
        help="the address the `kubernetes` Service's Endpoints name, as kube-apiserver's flag (default: the bind "
        "address when it is specific and not loopback, else the default route's interface)",
    )
    parser.add_argument(
        "--service-cluster-ip-range", type=_cidr, default=DEFAULT_SERVICE_CLUSTER_IP_RANGE, metavar="CIDR",
        help=f"the range Services' cluster IPs are allocated from (default {DEFAULT_SERVICE_CLUSTER_IP_RANGE}, "
        "as kube-apiserver's); its first address is the `kubernetes` Service's",
    )
    # kube-controller-manager's leader election flags and defaults (server/runtime/election.py)
    parser.add_argument("--leader-elect", type=_bool, default=True,
                        help="run the controllers only while this core holds the Lease kube-system/"
                        f"{LEASE_NAME}, so that one of several cores over one store runs them (default true)")
    parser.add_argument("--leader-elect-lease-duration", type=_seconds, default=15.0, metavar="SECONDS",
                        help="how long a standby waits after the last renewal it saw before taking over (default 15s)")
    parser.add_argument("--leader-elect-renew-deadline", type=_seconds, default=10.0, metavar="SECONDS",
                        help="how long the leader tries to renew before it stops leading (default 10s)")
    parser.add_argument("--leader-elect-retry-period", type=_seconds, default=2.0, metavar="SECONDS",
                        help="time between tries to acquire or renew (default 2s)")


def _election(args: argparse.Namespace) -> ElectionConfig:
    """SystemExit with client-go's words for timings that cannot elect."""
    config = ElectionConfig(enabled=args.leader_elect, lease_duration=args.leader_elect_lease_duration,
                            renew_deadline=args.leader_elect_renew_deadline,
                            retry_period=args.leader_elect_retry_period)
    problems = config.problems() if config.enabled else []
    if problems:
        raise SystemExit(f"capstan: leader election: {'; '.join(problems)}")
    return config


def _limit_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-requests-inflight", type=int, default=None,
                        help=f"read-only requests the server serves at once, watches aside, shared evenly by its "
                        f"workers (default {DEFAULT.max_requests_inflight} a worker, kube's 400 shared by one "
                        "event loop; 0: no limit)")
    parser.add_argument("--max-mutating-requests-inflight", type=int, default=None,
                        help="mutating requests the server serves at once, shared evenly by its workers (default "
                        f"{DEFAULT.max_mutating_requests_inflight} a worker, kube's 200 shared by one event loop; 0: "
                        "no limit)")
    parser.add_argument("--enable-priority-and-fairness", type=_bool, default=True,
                        help="over a limit, queue each client's requests fairly (default true); false: answer "
                        "429 at once")


def _limiter(args: argparse.Namespace) -> Limiter:
    """This process's limits. A limit given on the command line is the server's: each of its N workers admits
    its share (rounded up), so together they admit what was asked, as one kube-apiserver would. The defaults
    are each event loop's (server/machinery/limits/config.py says why), so each worker has them whole."""
    count = workers.worker_count(os.environ)

    def share(given: int | None, default: int) -> int:
        return default if given is None else -(-given // count)

    return Limiter(Limits(max_requests_inflight=share(args.max_requests_inflight, DEFAULT.max_requests_inflight),
                          max_mutating_requests_inflight=share(args.max_mutating_requests_inflight,
                                                               DEFAULT.max_mutating_requests_inflight),
                          fair_queuing=args.enable_priority_and_fairness))


def _seconds(text: str) -> float:
    try:
        seconds = float(text.removesuffix("s"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, not {text!r}") from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, not {text!r}")
    return seconds


def _connection_flags(parser: argparse.ArgumentParser, *, http: bool, grpc: bool) -> None:
    """kube-apiserver's connection limits (secure_serving.go), as flags where kube has none."""
    parser.add_argument("--read-header-timeout", type=_seconds, default=READ_HEADER_TIMEOUT, metavar="SECONDS",
                        help=f"close a connection that has not sent its request headers (HTTP) or finished its "
                        f"handshake (gRPC) in time (default {READ_HEADER_TIMEOUT:g}, kube-apiserver's)")
    parser.add_argument("--idle-timeout", type=_seconds, default=IDLE_TIMEOUT, metavar="SECONDS",
                        help=f"close a keep-alive connection idle this long (default {IDLE_TIMEOUT:g}, "
                        "kube-apiserver's)")
    if http:
        parser.add_argument("--max-connections", type=int, default=0,
                            help="open HTTP connections; past it new ones are reset at once (default 0: half the "
                            "open file limit left after a reserve of 1024)")
        parser.add_argument("--health-port", type=int, default=-1,
                            help="also answer /healthz, /livez and /readyz on this plain HTTP port, from a thread "
                            "of their own so a busy server answers them at once (default -1: none; 0 picks one)")
    if grpc:
        parser.add_argument("--http2-max-streams-per-connection", type=int,
                            default=MAX_STREAMS_PER_CONNECTION,
                            help="concurrent calls one gRPC connection may carry; more wait (default "
                            f"{MAX_STREAMS_PER_CONNECTION})")


async def _start_health(app: web.Application, args: argparse.Namespace, started: contextlib.AsyncExitStack) -> None:
    """The --health-port listener, when asked for, beside `app`'s port; `started` stops it."""
    if args.health_port < 0:
        return
    listener = HealthListener(app[HEALTH_KEY], limits=_connection_limits(args))
    port = await listener.start(args.bind_address, args.health_port)
    started.push_async_callback(listener.stop)
    log.info("capstan health: http://%s:%d", _host(args.bind_address), port)


def _connection_limits(args: argparse.Namespace) -> ConnectionLimits:
    return ConnectionLimits(read_header_timeout=args.read_header_timeout, idle_timeout=args.idle_timeout,
                            max_connections=getattr(args, "max_connections", 0))


def _grpc_limits(args: argparse.Namespace) -> GrpcLimits:
    return GrpcLimits(handshake_timeout=args.read_header_timeout, idle_timeout=args.idle_timeout,
                      max_streams_per_connection=args.http2_max_streams_per_connection,
                      reuse_port=_worker() is not None)


def _worker_note() -> str:
    index = _worker()
    return "" if index is None else f" worker {index} pid {os.getpid()}"


def _worker() -> int | None:
    """This process's index among the workers sharing the ports and the store, or None when it is alone."""
    return workers.worker_index(os.environ)


def _listen_flags(parser: argparse.ArgumentParser, *, http: bool, grpc: bool) -> None:
    parser.add_argument("--bind-address", type=_ip, default="127.0.0.1",
                        help="the IP address to serve on (default 127.0.0.1; 0.0.0.0 for every interface)")
    parser.add_argument("--listen", type=_ip, dest="bind_address", help="deprecated: use --bind-address")
    parser.add_argument("--insecure", action="store_true",
                        help="UNSAFE, for tests and demos: plain HTTP and gRPC, every caller trusted; loopback only")
    parser.add_argument("--cert-dir", type=Path, default=None,
                        help="where generated certificates and keys live (default <data-dir>/pki)")
    parser.add_argument("--tls-cert-file", type=Path, default=None,
                        help="the serving certificate (chain), instead of the generated one; reloaded when it changes")
    parser.add_argument("--tls-private-key-file", type=Path, default=None, help="the --tls-cert-file's key")
    parser.add_argument("--client-ca-file", type=Path, default=None,
                        help="CA bundle for client certificates (default: the cert dir's ca.crt)")
    parser.add_argument("--requestheader-client-ca-file", type=Path, default=None,
                        help="CA bundle for front proxies' client certificates (default: front-proxy-ca.crt)")
    if http:
        parser.add_argument("--secure-port", type=int, default=6443, help="HTTPS port (default 6443; 0 picks one)")
        parser.add_argument("--http-port", type=int, default=8080,
                            help="plain HTTP port with --insecure (default 8080; 0 picks one)")
    if grpc:
        parser.add_argument("--grpc-port", type=int, default=50051,
                            help="gRPC port, TLS without client certificates (default 50051; 0 picks one)")
        parser.add_argument("--grpc-mtls-port", type=int, default=50052,
                            help="gRPC port requiring a client certificate (default 50052; 0 picks one; -1 none)")


def _fault_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fault-injection", action="store_true",
                        help="FOR TESTS ONLY: serve the admin API /debug/capstan/faults, whose rules answer chosen"
                             " requests with 429, 500, 410, 504, ... and end open watches (gateway/faults.py);"
                             " with serve, gRPC calls meet the same rules")


def _security_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--token-auth-file", type=Path, default=None, help="static bearer tokens (kube's CSV)")
    parser.add_argument("--anonymous-auth", type=_bool, default=True,
                        help="requests with no credential run as system:anonymous (default true)")
    parser.add_argument("--authorization-mode", type=_modes, default=("RBAC",),
                        help="comma list of Node, RBAC, Webhook, AlwaysAllow, AlwaysDeny, in order (default RBAC)")
    parser.add_argument("--oidc-issuer-url", default="", help="the OpenID Connect issuer (https)")
    parser.add_argument("--oidc-client-id", default="", help="the audience ID tokens must be for")
    parser.add_argument("--oidc-username-claim", default="sub", help="the claim that is the username (default sub)")
    parser.add_argument("--oidc-username-prefix", default="",
                        help="prefixed to usernames (default: '<issuer>#' unless the claim is email; '-' for none)")
    parser.add_argument("--oidc-groups-claim", default="", help="the claim that lists the user's groups")
    parser.add_argument("--oidc-groups-prefix", default="", help="prefixed to every group")
    parser.add_argument("--oidc-required-claim", type=_claim, action="append", default=[], metavar="KEY=VALUE",
                        help="a claim ID tokens must carry with this value; repeatable")
    parser.add_argument("--oidc-ca-file", type=Path, default=None,
                        help="the CA that verifies the issuer's certificate (default: the system roots)")
    parser.add_argument("--oidc-signing-algs", type=_names, default=("RS256",),
                        help="comma list of accepted JOSE algorithms (default RS256)")
    parser.add_argument("--authentication-token-webhook-config-file", type=Path, default=None,
                        help="a kubeconfig naming the service that answers TokenReviews for unknown bearer tokens")
    parser.add_argument("--authentication-token-webhook-version", default="v1beta1", choices=("v1", "v1beta1"),
                        help="the TokenReview version sent (default v1beta1)")
    parser.add_argument("--authentication-token-webhook-cache-ttl", type=_go_duration, default=120.0,
                        metavar="DURATION", help="how long the webhook's answers are cached (default 2m0s)")
    parser.add_argument("--authorization-webhook-config-file", type=Path, default=None,
                        help="a kubeconfig naming the service that answers SubjectAccessReviews (mode Webhook)")
    parser.add_argument("--authorization-webhook-version", default="v1beta1", choices=("v1", "v1beta1"),
                        help="the SubjectAccessReview version sent (default v1beta1)")
    parser.add_argument("--authorization-webhook-cache-authorized-ttl", type=_go_duration, default=300.0,
                        metavar="DURATION", help="how long an allow is cached (default 5m0s)")
    parser.add_argument("--authorization-webhook-cache-unauthorized-ttl", type=_go_duration, default=30.0,
                        metavar="DURATION", help="how long a refusal is cached (default 30s)")
    parser.add_argument("--service-account-issuer", default=DEFAULT_ISSUER,
                        help=f"the iss of service account tokens (default {DEFAULT_ISSUER})")
    parser.add_argument("--service-account-key-file", type=Path, action="append", default=[],
                        help="a public (or private) key verifying service account tokens; repeatable")
    parser.add_argument("--service-account-signing-key-file", type=Path, default=None,
                        help="the private key signing service account tokens (default: the cert dir's sa.key)")
    parser.add_argument("--requestheader-allowed-names", type=_names, default=(pki.FRONT_PROXY_CLIENT,),
                        help=f"front proxies' common names, comma list (default {pki.FRONT_PROXY_CLIENT})")
    parser.add_argument("--audit-log-path", default="", help="audit events as JSON lines; - is standard output")
    parser.add_argument("--audit-policy-file", type=Path, default=None, help="an audit.k8s.io/v1 Policy")
    parser.add_argument("--audit-log-maxsize", type=int, default=0, help="megabytes before rotating (0: never)")
    parser.add_argument("--audit-log-maxbackup", type=int, default=0, help="rotated files kept (0: all)")


def _proxy_client_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--proxy-client-cert-file", type=Path, default=None,
                        help="the front proxy's client certificate (default front-proxy-client.crt): a gateway proves"
                             " itself with it to the core, and presents it to extension API servers (APIServices)")
    parser.add_argument("--proxy-client-key-file", type=Path, default=None, help="its key")


def _proxy_client(args: argparse.Namespace, certs: pki.CertDir) -> ProxyClientCertificate:
    return ProxyClientCertificate(args.proxy_client_cert_file or certs.front_proxy_client_cert,
                                  args.proxy_client_key_file or certs.front_proxy_client_key)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="capstan", description=(__doc__ or "").splitlines()[0])
    tools.version_flag(parser)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run store, gRPC core and HTTP gateway in one process")
    _store_flags(serve)
    _listen_flags(serve, http=True, grpc=True)
    _connection_flags(serve, http=True, grpc=True)
    _security_flags(serve)
    _core_flags(serve)
    _limit_flags(serve)
    _proxy_client_flags(serve)
    simulated.serve_flags(serve)
    _fault_flags(serve)
    logs.add_flags(serve)
    _tracing_flag(serve)

    core = commands.add_parser("core", help="run the store and the gRPC core only")
    _store_flags(core)
    _listen_flags(core, http=False, grpc=True)
    _connection_flags(core, http=False, grpc=True)
    _security_flags(core)
    _core_flags(core)
    _limit_flags(core)
    _proxy_client_flags(core)
    simulated.serve_flags(core)
    logs.add_flags(core)
    _tracing_flag(core)
    core.add_argument("--metrics-port", type=int, default=-1,
                      help="serve /metrics on this port (HTTPS with the serving certificate, authenticated and "
                           "authorized as kube's: get /metrics; plain HTTP with --insecure; 0 picks one; default "
                           "-1: off)")

    gateway = commands.add_parser("gateway", help="run an HTTP gateway in front of a core reached over gRPC")
    gateway.add_argument("--core", required=True, type=_cores, metavar="HOST:PORT[,HOST:PORT...]",
                         help="the cores' gRPC addresses: each one's --grpc-mtls-port (--grpc-port with --insecure);"
                              " several are balanced and failed over (gateway/transport/pool.py)")
    gateway.add_argument("--data-dir", type=Path, default=Path("data"),
                         help="where the cert dir is by default (default ./data: the core's, on one machine)")
    _listen_flags(gateway, http=True, grpc=False)
    _connection_flags(gateway, http=True, grpc=False)
    _proxy_client_flags(gateway)
    _limit_flags(gateway)
    _fault_flags(gateway)
    logs.add_flags(gateway)
    _tracing_flag(gateway)

    nodes = commands.add_parser("nodes", help="simulated nodes as a client of any API server (kwok's role)")
    simulated.command_flags(nodes)
    logs.add_flags(nodes)
    _tracing_flag(nodes)
    tools.add_commands(commands)
    args = parser.parse_args(argv)
    if args.command in ("serve", "core", "gateway") and bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        parser.error("--tls-cert-file and --tls-private-key-file go together")
    if args.command in ("serve", "core") and bool(args.cluster_signing_cert_file) != bool(
            args.cluster_signing_key_file):
        parser.error("--cluster-signing-cert-file and --cluster-signing-key-file go together")
    if args.command in ("serve", "core"):
        try:
            args.api = apienablement.runtime_config(args.runtime_config,
                                                    apienablement.feature_gates(args.feature_gates))
        except ValueError as err:
            parser.error(str(err))
    return args


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


def _check_insecure(args: argparse.Namespace) -> None:
    if args.insecure and not ipaddress.ip_address(args.bind_address).is_loopback:
        raise UsageError(
            f"--insecure serves plain HTTP and gRPC that trust every caller, so it binds only a loopback address,"
            f" not {args.bind_address}: use --bind-address 127.0.0.1, or drop --insecure to serve TLS")
    if args.insecure:
        log.warning(INSECURE_WARNING, args.bind_address)


def _cert_dir(args: argparse.Namespace) -> pki.CertDir:
    service_ip = Allocator(getattr(args, "service_cluster_ip_range", DEFAULT_SERVICE_CLUSTER_IP_RANGE)).first_ip
    return pki.ensure(args.cert_dir or args.data_dir / "pki", bind_address=args.bind_address,
                      service_ip=service_ip, serving=args.tls_cert_file is None,
                      service_account=getattr(args, "service_account_signing_key_file", None) is None)


def _serving(args: argparse.Namespace, certs: pki.CertDir) -> ServingFiles:
    return ServingFiles(args.tls_cert_file or certs.serving_cert, args.tls_private_key_file or certs.serving_key)


def _client_cas(args: argparse.Namespace, certs: pki.CertDir) -> tuple[Path, Path]:
    return (args.client_ca_file or certs.ca_cert,
            args.requestheader_client_ca_file or certs.front_proxy_ca_cert)


def _bundle(files: tuple[Path, ...]) -> bytes:
    return b"".join(path.read_bytes().rstrip(b"\n") + b"\n" for path in files)


def _security(args: argparse.Namespace, certs: pki.CertDir) -> SecurityConfig:
    client_ca, requestheader_ca = _client_cas(args, certs)
    anonymous = args.anonymous_auth
    if anonymous and "AlwaysAllow" in args.authorization_mode:  # kube's ApplyAuthorization: not anonymous and all
        log.warning("AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false. "
                    "You should use a different authorizer")
        anonymous = False
    signing = args.service_account_signing_key_file or certs.sa_key
    return SecurityConfig(
        authorization_modes=args.authorization_mode,
        anonymous_auth=anonymous,
        client_ca_file=client_ca,
        token_auth_file=args.token_auth_file,
        service_account_issuer=args.service_account_issuer,
        service_account_key_files=tuple(args.service_account_key_file) or (signing,),
        service_account_signing_key_file=signing,
        requestheader_client_ca_file=requestheader_ca,
        requestheader_allowed_names=args.requestheader_allowed_names,
        root_ca_file=certs.ca_cert if args.tls_cert_file is None else None,
        # the cert dir's CA by default, which --client-ca-file trusts by default
        cluster_signing_cert_file=args.cluster_signing_cert_file or certs.ca_cert,
        cluster_signing_key_file=args.cluster_signing_key_file or certs.ca_key,
        oidc_issuer_url=args.oidc_issuer_url,
        oidc_client_id=args.oidc_client_id,
        oidc_username_claim=args.oidc_username_claim,
        oidc_username_prefix=args.oidc_username_prefix,
        oidc_groups_claim=args.oidc_groups_claim,
        oidc_groups_prefix=args.oidc_groups_prefix,
        oidc_required_claims=tuple(args.oidc_required_claim),
        oidc_ca_file=args.oidc_ca_file,
        oidc_signing_algs=args.oidc_signing_algs,
        authentication_token_webhook_config_file=args.authentication_token_webhook_config_file,
        authentication_token_webhook_version=args.authentication_token_webhook_version,
        authentication_token_webhook_cache_ttl=args.authentication_token_webhook_cache_ttl,
        authorization_webhook_config_file=args.authorization_webhook_config_file,
        authorization_webhook_version=args.authorization_webhook_version,
        authorization_webhook_cache_authorized_ttl=args.authorization_webhook_cache_authorized_ttl,
        authorization_webhook_cache_unauthorized_ttl=args.authorization_webhook_cache_unauthorized_ttl,
        audit_log_path=args.audit_log_path,
        audit_policy_file=args.audit_policy_file,
        audit_log_maxsize=args.audit_log_maxsize,
        audit_log_maxbackup=args.audit_log_maxbackup, audit_log_shared=workers.worker_count(os.environ) > 1,
    )


def _host(address: str) -> str:
    reachable = pki.reachable_address(address)
    return f"[{reachable}]" if ":" in reachable else reachable


def untainting_warning(names: frozenset[str], plugins: frozenset[str]) -> str:
    """Why Pods would never be placed: a controller that places them runs, new Nodes are tainted not-ready, and
    no node lifecycle controller lifts the taint ("" when that is not so)."""
    placing = sorted(names & {"scheduler", "daemonset"})
    if not placing or "TaintNodesByCondition" not in plugins or "nodelifecycle" in names:
        return ""
    return (f"{' and '.join(placing)} on without nodelifecycle: a new Node keeps the not-ready taint "
            "TaintNodesByCondition gives it, and nothing is placed on it (add nodelifecycle to --controllers, or "
            "--disable-admission-plugins=TaintNodesByCondition)")


async def _start_core(store: Store, args: argparse.Namespace, security: SecurityConfig,
                      tls: GrpcTls | None = None, limiter: Limiter | None = None,
                      proxy_client: ProxyClientCertificate | None = None,
                      faults: Faults | None = None,
                      requests: apimetrics.RequestMetrics | None = None) -> RunningCore:
    plugins = admission.enabled(args.enable_admission_plugins, args.disable_admission_plugins)
    for name in sorted(admission.NOT_RUN & set(args.enable_admission_plugins)):
        log.warning("admission plugin %s is accepted, and not run: it has no effect here", name)
    names = controllers.enabled(args.controllers)
    stuck = untainting_warning(names, plugins)
    if stuck:
        log.warning("%s", stuck)
    return await start_core(store, listen=args.bind_address, grpc_port=args.grpc_port, security=security,
                            service_cluster_ip_range=args.service_cluster_ip_range, tls=tls,
                            limiter=limiter or _limiter(args), grpc_limits=_grpc_limits(args),
                            election=_election(args), watch_cache=_watch_cache(args),
                            admission_plugins=plugins,
                            podsecurity_configuration=_podsecurity_configuration(args.admission_control_config_file,
                                                                                 plugins),
                            proxy_client=proxy_client, controller_names=names,
                            api=args.api, advertise_address=args.advertise_address or "",
                            advertise_port=_advertise_port(args),
                            nodes=simulated.nodes_config(args), node_flags=simulated.node_flags(args),
                            store_checks=_store_checks(store, args), faults=faults, request_metrics=requests,
                            event_ttl=args.event_ttl)


def _advertise_port(args: argparse.Namespace) -> int:
    """The port the `kubernetes` Service and Endpoints send to: `serve`'s secure port when one is named (a port
    picked at bind time is not known yet), else kube's default 6443 (a `core`, whose gateway is elsewhere)."""
    from server.startup.bootstrap import KUBERNETES_TARGET_PORT  # the core's own: imported as the core starts

    port = getattr(args, "secure_port", 0)
    if getattr(args, "insecure", False) or not isinstance(port, int) or port <= 0:
        return KUBERNETES_TARGET_PORT
    return port


def _podsecurity_configuration(path: Path | None, plugins: frozenset[str]) -> podsecurity.Configuration | None:
    """The PodSecurity plugin's configuration in --admission-control-config-file (None: kube's default), read
    only where the plugin is on, as kube reads a plugin's configuration; UsageError with kube's words for a file
    kube-apiserver would not start with. The plugins configured there that Capstan does not read are logged."""
    if path is None:
        return None
    from server.admission import config as admissionconfig  # read only when a file is given
    from server.admission.podsecurity import config as podsecurity_config

    try:
        configuration = admissionconfig.read(path)
        read = podsecurity_config.from_admission(configuration) if podsecurity.NAME in plugins else None
    except admissionconfig.ConfigError as err:
        raise UsageError(str(err)) from None
    ignored = [name for name in configuration.names() if name != podsecurity.NAME or read is None]
    if ignored:
        log.info("--admission-control-config-file %s: the configuration of %s is not read (%s)", path,
                 ", ".join(ignored), "no such plugin in Capstan, or the plugin is off")
    return read


def _collectors(core: RunningCore, store: Store, args: argparse.Namespace,
                objects: StorageObjectsCounter) -> tuple[Collector, ...]:
    """The core's figures that the gateway beside it serves on /metrics: the admission webhooks', the core's
    own (authentication, admission, watches, leader election), API Priority and Fairness's, encryption at
    rest's and the store's object counts."""
    own: tuple[Collector, ...] = (core.classifier.collector(),) if core.classifier is not None else ()
    if args.encryption_provider_config is not None:
        from storage.encryption import EncryptedStore
        from storage.encryption.metrics import EncryptionCollector

        assert isinstance(store, EncryptedStore)
        own = (*own, EncryptionCollector(store.encryption))
    return (webhook_metrics.REGISTRY, apimetrics.REGISTRY, *own, objects.collector)


def _request_metrics() -> apimetrics.RequestMetrics:
    """One process's apiserver_request_* (both transports of `capstan serve`), with process_* and python_*."""
    requests = apimetrics.RequestMetrics(CollectorRegistry())
    apimetrics.runtime_collectors(requests.registry)
    return requests


async def _start_peers(running: RunningCore, started: contextlib.AsyncExitStack) -> workerpeers.WorkerPeers | None:
    """In a worker: its socket for the other workers' scrapes, and the Metrics call answering for all; `started`
    stops it."""
    peers = workerpeers.from_environment(os.environ)
    if peers is not None:
        await peers.start()
        started.push_async_callback(peers.stop)
        running.guard.share_figures(peers)
    return peers


async def _start_metrics(running: RunningCore, args: argparse.Namespace, limiter: Limiter,
                         tls: ssl.SSLContext | None, peers: workerpeers.WorkerPeers | None,
                         started: contextlib.AsyncExitStack) -> None:
    """`capstan core --metrics-port`: /metrics of a core without a gateway, secured as kube's (gateway/metrics.py's
    metrics_app): the gRPC calls, process and runtime, load shedding, the store's size and objects, then the
    core's Metrics answer; `started` stops it."""
    if args.metrics_port < 0:
        return
    objects = StorageObjectsCounter(running.core)
    assert running.request_metrics is not None
    counters = gateway_metrics.Metrics(limiter, running.core.context.store,
                                       collectors=(running.classifier.collector(),) if running.classifier else (),
                                       requests=running.request_metrics, refresh=objects.refresh, peers=peers)
    counters.registry.register(objects.collector)
    app = gateway_metrics.metrics_app(InProcessClient(running.guard), counters)
    runner, port = await start_http(app, args.bind_address, args.metrics_port, tls,
                                    connection_limits=_connection_limits(args))
    started.push_async_callback(runner.cleanup)
    log.info("capstan core metrics: %s://%s:%d/metrics", "https" if tls else "http", _host(args.bind_address), port)


def _watch_cache(args: argparse.Namespace) -> CacheConfig | None:
    """--watch-cache: None leaves the choice to the backend (server/startup/app.py's watch_cache_for)."""
    if args.watch_cache is None:
        return None
    return CacheConfig() if args.watch_cache else DISABLED


async def serve(args: argparse.Namespace) -> None:
    _check_insecure(args)
    stop = _stop_event()
    host = _host(args.bind_address)
    store, lock = await _open_store(args)
    limiter = _limiter(args)  # one process, one loop: the HTTP and gRPC fronts share its limits
    faults = Faults(enabled=args.fault_injection)  # and its fault injection rules (off without the flag)
    requests = _request_metrics()  # and one scrape counts both
    started = contextlib.AsyncExitStack()  # what has started, stopped in reverse order however serving ends
    try:
        if args.insecure:
            core = await _start_core(store, args, INSECURE, limiter=limiter, faults=faults, requests=requests)
            started.push_async_callback(core.stop)
            peers = await _start_peers(core, started)
            objects = StorageObjectsCounter(core.core)
            app = build_app(InProcessClient(core.guard), server_address=f"{args.bind_address}:{args.http_port}",
                            limiter=limiter, storage=store, collectors=_collectors(core, store, args, objects),
                            faults=faults, requests=requests, refresh=objects.refresh, peers=peers)
            hostcheck.guard(app)
            runner, http_port = await start_http(app, args.bind_address, args.http_port,
                                                 connection_limits=_connection_limits(args),
                                                 reuse_port=_worker() is not None)
            started.push_async_callback(runner.cleanup)
            ports = {"http": http_port, "grpc": core.grpc_port}
            endpoints = {"http": f"http://{host}:{http_port}", "grpc": f"{host}:{core.grpc_port}"}
            summary = f"HTTP {endpoints['http']} gRPC {endpoints['grpc']}"
        else:
            certs = _cert_dir(args)
            serving = _serving(args, certs)
            client_cas = _bundle(_client_cas(args, certs))
            proxy_client = _proxy_client(args, certs)
            core = await _start_core(store, args, _security(args, certs),
                                     GrpcTls(serving, client_cas, args.grpc_mtls_port), limiter, proxy_client, faults,
                                     requests)
            started.push_async_callback(core.stop)
            peers = await _start_peers(core, started)
            objects = StorageObjectsCounter(core.core)
            app = build_app(InProcessClient(core.guard), server_address=f"{args.bind_address}:{args.secure_port}",
                            limiter=limiter, storage=store, collectors=_collectors(core, store, args, objects),
                            proxy_client=proxy_client, faults=faults, requests=requests, refresh=objects.refresh,
                            peers=peers)
            runner, https_port = await start_http(app, args.bind_address, args.secure_port,
                                                  server_context(serving, client_cas),
                                                  connection_limits=_connection_limits(args),
                                                  reuse_port=_worker() is not None)
            started.push_async_callback(runner.cleanup)
            ports = {"https": https_port, "grpc": core.grpc_port, "grpc_mtls": core.grpc.mtls_port or -1}
            endpoints = kubeconfigs.secure_endpoints(host, https_port, core.grpc_port, core.grpc.mtls_port, certs,
                                                     generated_serving=args.tls_cert_file is None)
            summary = " ".join(f"{name} {endpoints[key]}" for name, key in
                               (("HTTPS", "https"), ("gRPC", "grpc"), ("gRPC-mTLS", "grpc-mtls")) if key in endpoints)
        if not _worker():  # alone, or the first worker: the others share its ports and its endpoints
            kubeconfigs.write_endpoints(args.data_dir, endpoints)
            files.private_file(args.data_dir / ENDPOINTS_FILE)  # no secret in it, but the data dir's files are 0600
            await _start_health(app, args, started)
        gcpolicy.after_start()
        log.info("capstan serving: %s data %s (revision %d)%s", summary, args.data_dir, store.current_revision(),
                 _worker_note())
        workers.report_ready(os.environ, ports)
        await stop.wait()
        log.info("capstan shutting down")
    finally:
        await started.aclose()
        await store.close()
        if lock is not None:
            lock.release()


async def core(args: argparse.Namespace) -> None:
    _check_insecure(args)
    stop = _stop_event()
    host = _host(args.bind_address)
    store, lock = await _open_store(args)
    limiter = _limiter(args)
    started = contextlib.AsyncExitStack()  # what has started, stopped in reverse order however serving ends
    try:
        if args.insecure:
            running = await _start_core(store, args, INSECURE, limiter=limiter)
            started.push_async_callback(running.stop)
            peers = await _start_peers(running, started)
            await _start_metrics(running, args, limiter, None, peers, started)
            summary = f"gRPC {host}:{running.grpc_port}"
            ports = {"grpc": running.grpc_port}
        else:
            certs = _cert_dir(args)
            client_cas = _bundle(_client_cas(args, certs))
            running = await _start_core(store, args, _security(args, certs),
                                        GrpcTls(_serving(args, certs), client_cas, args.grpc_mtls_port),
                                        limiter=limiter, proxy_client=_proxy_client(args, certs))
            started.push_async_callback(running.stop)
            peers = await _start_peers(running, started)
            await _start_metrics(running, args, limiter, server_context(_serving(args, certs), client_cas), peers,
                                 started)
            summary = f"gRPC {host}:{running.grpc_port} (TLS)"
            ports = {"grpc": running.grpc_port, "grpc_mtls": running.grpc.mtls_port or -1}
            if running.grpc.mtls_port is not None:
                summary += f" gRPC-mTLS {host}:{running.grpc.mtls_port}"
        gcpolicy.after_start()
        log.info("capstan core serving: %s data %s (revision %d)%s", summary, args.data_dir,
                 store.current_revision(), _worker_note())
        workers.report_ready(os.environ, ports)
        await stop.wait()
        log.info("capstan core shutting down")
    finally:
        await started.aclose()
        await store.close()
        if lock is not None:
            lock.release()


async def gateway(args: argparse.Namespace) -> None:
    _check_insecure(args)
    stop = _stop_event()
    host = _host(args.bind_address)
    credentials = None
    if not args.insecure:
        certs = _cert_dir(args)
        credentials = front_proxy_credentials(certs, args.proxy_client_cert_file, args.proxy_client_key_file)
    client: CoreClient = (GrpcClient(args.core[0], credentials) if len(args.core) == 1
                          else PoolClient(args.core, credentials))
    started = contextlib.AsyncExitStack()  # what has started, stopped in reverse order however serving ends
    try:
        if args.insecure:
            app = build_app(client, server_address=f"{args.bind_address}:{args.http_port}", limiter=_limiter(args),
                            core_metrics=True, faults=Faults(enabled=args.fault_injection))
            hostcheck.guard(app)
            runner, port = await start_http(app, args.bind_address, args.http_port,
                                              connection_limits=_connection_limits(args))
            started.push_async_callback(runner.cleanup)
            address = f"HTTP http://{host}:{port}"
        else:
            client_cas = _bundle(_client_cas(args, certs))
            app = build_app(client, server_address=f"{args.bind_address}:{args.secure_port}", limiter=_limiter(args),
                            core_metrics=True, proxy_client=_proxy_client(args, certs),
                            faults=Faults(enabled=args.fault_injection))
            runner, port = await start_http(app, args.bind_address, args.secure_port,
                                            server_context(_serving(args, certs), client_cas),
                                              connection_limits=_connection_limits(args))
            started.push_async_callback(runner.cleanup)
            address = f"HTTPS https://{host}:{port}"
        await _start_health(app, args, started)
        gcpolicy.after_start()
        log.info("capstan gateway serving: %s core %s", address, ",".join(args.core))
        await stop.wait()
        log.info("capstan gateway shutting down")
    finally:
        await started.aclose()
        await client.close()


def _tracing_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tracing-config-file", type=Path, default=None,
                        help="kube's TracingConfiguration (apiserver.config.k8s.io/v1alpha1 or v1beta1: endpoint, "
                             "samplingRatePerMillion): OpenTelemetry traces to an OTLP gRPC collector; needs the "
                             "tracing extra (pip install 'capstan-apiserver[tracing]')")


def _start_tracing(args: argparse.Namespace) -> None:
    """Trace as --tracing-config-file says (before anything starts, so every part sees it on); OpenTelemetry is
    imported only then."""
    if args.tracing_config_file is None:
        return
    config = tracing.load_config(args.tracing_config_file)
    try:
        tracing.configure(config)
    except ImportError as err:
        raise ImportError(f"--tracing-config-file needs OpenTelemetry: pip install 'capstan-apiserver[tracing]' ({err})"
                          ) from None
    log.info("tracing to %s, %d of every million requests sampled", config.endpoint,
             config.sampling_rate_per_million)


def main(argv: Sequence[str] | None = None) -> None:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["kube-apiserver"]:
        from capstan.cli import kubeapiserver

        kubeapiserver.main(words[1:], program="capstan kube-apiserver")
        return
    args = parse_args(words)
    if args.command in tools.COMMANDS:
        tools.run(args)
        return
    run(args)


def run(args: argparse.Namespace) -> None:
    """Run a serving command parsed by parse_args, logging as its -v and --logging-format say; exit 1 with the
    error's text when it cannot start."""
    logs.configure(args.v, args.logging_format)
    logs.log_flags(log, logs.namespace_flags(args, skip=("command", "api")))
    try:
        _start_tracing(args)
    except (ValueError, ImportError) as err:
        print(f"capstan: {err}", file=sys.stderr)
        sys.exit(1)
    log.info("memory allocator: %s", allocator.describe(os.environ))
    raise_nofile_limit()  # as Go's runtime does: connections are bounded by --max-connections, not by it
    command = {"serve": serve, "core": core, "gateway": gateway, "nodes": simulated.run}[args.command]
    log.info("event loop: %s", eventloop.name())
    try:
        eventloop.run(command(args))
    except (StorageError, OSError, UsageError) as err:
        print(f"capstan: {err}", file=sys.stderr)
        sys.exit(1)
    finally:
        tracing.shutdown()  # what is batched is sent before the process ends
