"""`capstan kube-apiserver` (and the `capstan-kube-apiserver` script): Capstan behind kube-apiserver 1.28's command
line, so that what starts a kube-apiserver binary (controller-runtime's envtest, scripts, kubeadm-style manifests)
starts Capstan unchanged.

The command line is read as pflag reads kube's (capstan/cli/kubeflags.py); the flags Capstan gives a meaning to
become `capstan serve`'s, the rest are accepted and logged at -v=1. What this entry point does as kube-apiserver
does, where `capstan serve` chooses otherwise:
- the store is the etcd of `--etcd-servers` (required, as kube requires it); `--cert-dir` (default
  /var/run/kubernetes) holds the generated files and the endpoints file;
- a serving certificate given as `apiserver.crt`/`apiserver.key` in `--cert-dir` is used as given (envtest
  writes its own there); absent, one is generated with its CA, as kube self-signs;
- kube's defaults: `--bind-address` 0.0.0.0, `--authorization-mode` AlwaysAllow, `--service-cluster-ip-range`
  10.0.0.0/24;
- no kube-controller-manager controller runs (garbage collection, namespace finalization, ServiceAccounts ...):
  a bare kube-apiserver runs none, and envtest's users write their tests knowing it; `capstan serve` runs them;
- gRPC, Capstan's own interface, listens on a free port (written to the endpoints file), without the mutual-TLS
  port, so that several servers run side by side as envtest runs them.
Errors are cobra's: `Error: ...` on standard error and exit status 1. `--help` and `--version` import none of the
server's modules (envtest runs `--help` before every start).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from capstan.cli import kubeflags
from capstan.cli.kubeflags import FlagError, Parsed
from server.machinery import version as versions

log = logging.getLogger("capstan.kube-apiserver")

DESCRIPTION = f"""The Kubernetes API server validates and configures data
for the api objects which include pods, services, replicationcontrollers, and
others. The API Server services REST operations and provides the frontend to the
cluster's shared state through which all other components interact.

This kube-apiserver is Capstan {versions.CAPSTAN_VERSION}, implementing Kubernetes {versions.KUBE_GIT_VERSION}:
the flags below are kube-apiserver 1.28's; those marked as having no effect are accepted and logged at -v=1."""

KUBE_DEFAULT_AUTHORIZATION = ("AlwaysAllow",)
KUBE_SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"  # kube-apiserver's DefaultServiceIPCIDR
# capstan serve's (commands.AUTHORIZATION_MODES, not imported: --help loads none of the server)
SUPPORTED_MODES = frozenset({"Node", "RBAC", "Webhook", "AlwaysAllow", "AlwaysDeny"})
IDENTITY_FLAGS = ("oidc-issuer-url", "oidc-client-id", "oidc-username-claim", "oidc-username-prefix",
                  "oidc-groups-claim", "oidc-groups-prefix", "oidc-ca-file",
                  "authentication-token-webhook-config-file", "authentication-token-webhook-version",
                  "authentication-token-webhook-cache-ttl", "authorization-webhook-config-file",
                  "authorization-webhook-version", "authorization-webhook-cache-authorized-ttl",
                  "authorization-webhook-cache-unauthorized-ttl")


class ConfigError(ValueError):
    """Flags that parse but cannot be served; the message is kube's where kube refuses them too."""


def main(argv: Sequence[str], program: str = "kube-apiserver") -> None:
    """Parse `argv` as kube-apiserver does and serve, or print help, the version or the error."""
    try:
        parsed = kubeflags.parse(argv)
    except FlagError as err:
        _fail(str(err))
    if parsed.boolean("help"):
        sys.stdout.write(kubeflags.usage(program, DESCRIPTION))
        return
    shown = parsed.last("version")
    if shown is not None and shown not in kubeflags.GO_FALSE:
        print(raw_version() if shown == "raw" else f"Kubernetes {versions.KUBE_GIT_VERSION}")
        return
    if any(parsed.positional):
        quoted = ", ".join(f'"{word}"' for word in parsed.positional)
        _fail(f'"{program}" does not take any arguments, got [{quoted}]')
    try:
        argv_serve = serve_argv(parsed)
    except ConfigError as err:
        _fail(str(err))
    from capstan.cli import commands, logs  # the server's modules: imported only to serve, not for --help

    args = commands.parse_args(argv_serve)
    verbosity = parsed.verbosity()
    args.v = max(args.v, verbosity)  # kube's -v is the server's (capstan/cli/logs.py)
    logs.configure(args.v, args.logging_format)
    if verbosity >= 1:
        log.info("kube-apiserver %s (Capstan %s): capstan %s", versions.KUBE_GIT_VERSION, versions.CAPSTAN_VERSION,
                 " ".join(argv_serve))
        for note in without_effect(parsed):
            log.info("%s", note)
    commands.run(args)


def without_effect(parsed: Parsed) -> list[str]:
    """What -v=1 logs for each flag given that Capstan accepts without giving it a meaning."""
    return [f"flag --{name}={value} accepted: it has no effect in Capstan"
            for name, values in parsed.given.items() if name not in kubeflags.HONOURED for value in values]


def _fail(message: str) -> NoReturn:
    print(f"Error: {message}", file=sys.stderr)
    sys.exit(1)


def raw_version() -> str:
    """`--version=raw`: kube's version.Info as Go's %#v prints it."""
    info = versions.info()
    fields = ", ".join(f'{key[0].upper()}{key[1:]}:"{value}"' for key, value in info.items())
    return "version.Info{" + fields + "}"


def serve_argv(parsed: Parsed) -> list[str]:
    """The `capstan serve` command line the kube flags mean; ConfigError for what cannot be served."""
    from server import admission
    from server.startup import controllers

    backend = parsed.last("storage-backend") or "etcd3"
    if backend != "etcd3":
        raise ConfigError("--storage-backend invalid, allowed values: etcd3. If not specified, it will default to "
                          "'etcd3'")
    servers = parsed.items("etcd-servers")
    if not servers:
        raise ConfigError("[--etcd-servers must be specified]")
    cert_dir = Path(parsed.last("cert-dir") or _default("cert-dir"))
    argv = ["serve", "--data-dir", str(cert_dir), "--cert-dir", str(cert_dir),
            "--etcd-servers", ",".join(servers),
            "--bind-address", parsed.last("bind-address") or _default("bind-address"),
            "--secure-port", parsed.last("secure-port") or _default("secure-port"),
            "--grpc-port", "0", "--grpc-mtls-port", "-1",
            "--authorization-mode", ",".join(_modes(parsed)),
            "--controllers=" + ",".join(f"-{controller.name}" for controller in controllers.CONTROLLERS)]
    tls = (parsed.last("tls-cert-file"), parsed.last("tls-private-key-file"))
    if not any(tls) and (cert_dir / "apiserver.crt").is_file() and (cert_dir / "apiserver.key").is_file():
        tls = (str(cert_dir / "apiserver.crt"), str(cert_dir / "apiserver.key"))  # kube's cert-dir pair, as given
    for flag, value in (("--tls-cert-file", tls[0]), ("--tls-private-key-file", tls[1])):
        if value:
            argv += [flag, value]
    for name in ("etcd-prefix", "etcd-cafile", "etcd-certfile", "etcd-keyfile", "advertise-address",
                 "admission-control-config-file", "client-ca-file", "requestheader-client-ca-file", "token-auth-file",
                 "service-account-signing-key-file", "proxy-client-cert-file", "proxy-client-key-file",
                 "audit-log-path", "audit-policy-file", "audit-log-maxsize", "audit-log-maxbackup",
                 "max-requests-inflight", "max-mutating-requests-inflight", "event-ttl", *IDENTITY_FLAGS):
        value = parsed.last(name)
        if value:
            argv += [f"--{name}", value]
    for name in ("anonymous-auth", "enable-priority-and-fairness", "watch-cache"):
        if parsed.has(name):
            argv += [f"--{name}", str(parsed.boolean(name)).lower()]
    issuers = parsed.items("service-account-issuer")
    if issuers:
        argv += ["--service-account-issuer", issuers[0]]  # kube signs with the first; Capstan accepts that one
    for key_file in parsed.items("service-account-key-file"):
        argv += ["--service-account-key-file", key_file]
    if parsed.has("oidc-signing-algs"):
        argv += ["--oidc-signing-algs", ",".join(parsed.items("oidc-signing-algs"))]
    for claim in parsed.items("oidc-required-claim"):
        argv += ["--oidc-required-claim", claim]
    if parsed.has("requestheader-allowed-names"):
        argv += ["--requestheader-allowed-names", ",".join(parsed.items("requestheader-allowed-names"))]
    ranges = parsed.items("service-cluster-ip-range") or [KUBE_SERVICE_CLUSTER_IP_RANGE]
    argv += ["--service-cluster-ip-range", ranges[0]]
    enable, disable = parsed.items("enable-admission-plugins"), parsed.items("disable-admission-plugins")
    try:
        admission.enabled(enable, disable)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    if enable:
        argv += ["--enable-admission-plugins", ",".join(enable)]
    if disable:
        argv += ["--disable-admission-plugins", ",".join(disable)]
    for name in ("feature-gates", "runtime-config"):
        for value in parsed.given.get(name, []):
            argv.append(f"--{name}={value}")
    return argv


def _default(name: str) -> str:
    default = kubeflags.FLAGS[name].default
    assert default is not None
    return default


def _modes(parsed: Parsed) -> list[str]:
    """--authorization-mode as Capstan serves it: kube's default AlwaysAllow; ConfigError for a mode it does not
    serve (ABAC)."""
    modes = parsed.items("authorization-mode") or list(KUBE_DEFAULT_AUTHORIZATION)
    missing = [mode for mode in modes if mode not in SUPPORTED_MODES]
    if missing:
        raise ConfigError(f"authorization-mode {','.join(missing)!r} is not served by Capstan (it serves "
                          f"{', '.join(sorted(SUPPORTED_MODES))})")
    return modes


def program_name() -> str:
    """The name this process was started as (`kube-apiserver` from a KUBEBUILDER_ASSETS directory)."""
    return os.path.basename(sys.argv[0]) or "kube-apiserver"
