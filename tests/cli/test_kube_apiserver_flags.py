"""kube-apiserver's command line (capstan/cli/kubeflags.py, kubeapiserver.py): pflag's parsing rules and texts,
the mapping of kube's flags onto `capstan serve`, and the commands' `--help`, `--version` and refusals as kube
1.28's binary answers them (exit status and the first line of standard error)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from capstan.cli import commands, kubeapiserver, kubeflags
from capstan.cli.kubeflags import FlagError
from server.machinery.version import CAPSTAN_VERSION
from server.startup import controllers

ROOT = Path(__file__).resolve().parents[2]
ETCD = ["--etcd-servers=http://127.0.0.1:2379"]

# (argv, flag, what Parsed gives back for it: "last", "items", "pairs" or "bool")
PARSES: list[tuple[list[str], str, str, object]] = [
    (["--secure-port=1234"], "secure-port", "last", "1234"),
    (["--secure-port", "1234"], "secure-port", "last", "1234"),
    (["--secure-port=1", "--secure-port=2"], "secure-port", "last", "2"),  # a scalar repeated: the last
    (["--etcd_servers=http://a"], "etcd-servers", "items", ["http://a"]),  # _ reads as -
    (["--cert-dir", "--weird"], "cert-dir", "last", "--weird"),  # the next word, whatever it looks like
    (["--allow-privileged"], "allow-privileged", "bool", True),
    (["--allow-privileged=false"], "allow-privileged", "bool", False),
    (["--allow-privileged=F"], "allow-privileged", "bool", False),  # Go's ParseBool words
    (["--allow-privileged=1"], "allow-privileged", "bool", True),
    ([], "anonymous-auth", "bool", True),  # the default
    (["--anonymous-auth=false"], "anonymous-auth", "bool", False),
    (["--etcd-servers=http://a,http://b", "--etcd-servers=http://c"], "etcd-servers", "items",
     ["http://a", "http://b", "http://c"]),  # strings: comma lists, repeats append
    (["--service-account-key-file=a,b", "--service-account-key-file", "c"], "service-account-key-file",
     "items", ["a,b", "c"]),  # stringArray: each value whole
    (["--feature-gates=A=true,B=false", "--feature-gates=A=false"], "feature-gates", "pairs",
     {"A": "false", "B": "false"}),  # maps merge, the later key wins
    (["--runtime-config=api/all=true"], "runtime-config", "pairs", {"api/all": "true"}),
    # ConfigurationMap: a key alone is set to "" (kube's test-cmd starts kube-apiserver with --runtime-config=api/v1)
    (["--runtime-config=api/v1,batch/v1=true"], "runtime-config", "pairs", {"api/v1": "", "batch/v1": "true"}),
    (["-v", "3"], "v", "last", "3"),
    (["-v=4"], "v", "last", "4"),
    (["-v5"], "v", "last", "5"),
    (["--v=2"], "v", "last", "2"),
    (["-h"], "help", "bool", True),
    (["--version"], "version", "last", "true"),
    (["--version=raw"], "version", "last", "raw"),
    (["--tls-min-version=VersionTLS12"], "tls-min-version", "last", "VersionTLS12"),
    (["--service-node-port-range=30000-32767"], "service-node-port-range", "last", "30000-32767"),
    (["--request-timeout=1m30s"], "request-timeout", "last", "1m30s"),
]


@pytest.mark.parametrize(("argv", "name", "read", "expected"), PARSES, ids=[" ".join(p[0]) or "none" for p in PARSES])
def test_parses_as_pflag(argv: list[str], name: str, read: str, expected: object) -> None:
    parsed = kubeflags.parse(argv)
    got = {"last": parsed.last, "items": parsed.items, "pairs": parsed.pairs, "bool": parsed.boolean}[read](name)
    assert got == expected


def test_positional_words_and_the_end_of_flags() -> None:
    parsed = kubeflags.parse(["word", "--allow-privileged", "false", "--", "--secure-port=1"])
    assert (parsed.boolean("allow-privileged"), parsed.positional) == (True, ["word", "false", "--secure-port=1"])


REFUSALS: list[tuple[list[str], str]] = [
    (["--foo"], "unknown flag: --foo"),
    (["--foo=bar"], "unknown flag: --foo"),
    (["--insecure-port=0"], "unknown flag: --insecure-port"),  # gone since 1.24
    (["-x"], "unknown shorthand flag: 'x' in -x"),
    (["--secure-port"], "flag needs an argument: --secure-port"),
    (["-v"], "flag needs an argument: 'v' in -v"),
    (["--secure-port=x"], 'invalid argument "x" for "--secure-port" flag: strconv.ParseInt: parsing "x": '
                          "invalid syntax"),
    (["--allow-privileged=maybe"], 'invalid argument "maybe" for "--allow-privileged" flag: strconv.ParseBool: '
                                   'parsing "maybe": invalid syntax'),
    (["--request-timeout=5"], 'invalid argument "5" for "--request-timeout" flag: time: invalid duration "5"'),
    (["--feature-gates=A"], 'invalid argument "A" for "--feature-gates" flag: missing bool value for A'),
    (["---x"], "bad flag syntax: ---x"),
    (["--oidc-required-claim=a"], 'invalid argument "a" for "--oidc-required-claim" flag: malformed pair, expect '
                                  "string=string"),  # MapStringString
    (["--allow-metric-labels=a"], 'invalid argument "a" for "--allow-metric-labels" flag: a must be formatted as '
                                  "key=value"),  # pflag's stringToString
    (["--bind-address=localhost"], 'invalid argument "localhost" for "--bind-address" flag: failed to parse IP: '
                                   '"localhost"'),
]


@pytest.mark.parametrize(("argv", "message"), REFUSALS, ids=[r[0][0] for r in REFUSALS])
def test_refuses_as_pflag(argv: list[str], message: str) -> None:
    with pytest.raises(FlagError) as refused:
        kubeflags.parse(argv)
    assert str(refused.value) == message


ENVTEST = [  # controller-runtime 0.16's flags for a cert dir D, in its order
    "--allow-privileged=true", "--authorization-mode=RBAC", "--bind-address=127.0.0.1", "--cert-dir=D",
    "--client-ca-file=D/client-cert-auth-ca.crt", "--disable-admission-plugins=ServiceAccount",
    "--etcd-servers=http://127.0.0.1:2379", "--secure-port=4321", "--service-account-issuer=https://127.0.0.1:4321/",
    "--service-account-key-file=D/sa-signer.crt", "--service-account-signing-key-file=D/sa-signer.key",
    "--service-cluster-ip-range=10.0.0.0/24",
]


def test_envtest_flags_map_onto_serve(tmp_path: Path) -> None:
    (tmp_path / "apiserver.crt").write_text("pem")  # envtest's pair, pre-written
    (tmp_path / "apiserver.key").write_text("pem")
    argv = [arg.replace("=D", f"={tmp_path}") for arg in ENVTEST]
    args = commands.parse_args(kubeapiserver.serve_argv(kubeflags.parse(argv)))
    got = (args.command, args.etcd_servers, args.bind_address, args.secure_port, args.authorization_mode,
           args.cert_dir, args.data_dir, args.tls_cert_file, args.tls_private_key_file, args.client_ca_file,
           args.disable_admission_plugins, args.service_account_issuer, args.service_account_key_file,
           args.service_account_signing_key_file, args.service_cluster_ip_range, args.grpc_port,
           args.grpc_mtls_port)
    assert got == ("serve", ("http://127.0.0.1:2379",), "127.0.0.1", 4321, ("RBAC",), tmp_path, tmp_path,
                   tmp_path / "apiserver.crt", tmp_path / "apiserver.key", tmp_path / "client-cert-auth-ca.crt",
                   ("ServiceAccount",), "https://127.0.0.1:4321/", [tmp_path / "sa-signer.crt"],
                   tmp_path / "sa-signer.key", "10.0.0.0/24", 0, -1)
    assert controllers.enabled(args.controllers) == frozenset()  # no kube-controller-manager


# (kube flags beside --etcd-servers, the serve attribute, its value)
MAPPED: list[tuple[list[str], str, object]] = [
    ([], "authorization_mode", ("AlwaysAllow",)),  # kube's default
    ([], "bind_address", "0.0.0.0"),
    ([], "secure_port", 6443),
    ([], "cert_dir", Path("/var/run/kubernetes")),
    ([], "tls_cert_file", None),  # no pair in the cert dir: generated, as kube self-signs
    ([], "service_cluster_ip_range", "10.0.0.0/24"),
    ([], "advertise_address", None),
    (["--authorization-mode=Node,RBAC"], "authorization_mode", ("Node", "RBAC")),
    (["--authorization-mode=Node"], "authorization_mode", ("Node",)),
    (["--oidc-issuer-url=https://issuer.example", "--oidc-client-id=app"], "oidc_issuer_url",
     "https://issuer.example"),
    (["--oidc-required-claim=team=a", "--oidc-required-claim=env=b"], "oidc_required_claim",
     [("team", "a"), ("env", "b")]),
    (["--advertise-address=10.1.2.3"], "advertise_address", "10.1.2.3"),
    (["--service-cluster-ip-range=10.96.0.0/12,fd00::/108"], "service_cluster_ip_range", "10.96.0.0/12"),
    (["--service-account-issuer=https://a", "--service-account-issuer=https://b"], "service_account_issuer",
     "https://a"),
    (["--anonymous-auth=false"], "anonymous_auth", False),
    (["--watch-cache=false"], "watch_cache", False),
    (["--etcd-prefix=/other"], "etcd_prefix", "/other"),
    (["--feature-gates=ValidatingAdmissionPolicy=true",
      "--runtime-config=admissionregistration.k8s.io/v1beta1=true"], "feature_gates",
     ["ValidatingAdmissionPolicy=true"]),
    (["--enable-admission-plugins=NamespaceLifecycle", "--enable-admission-plugins=LimitRanger"],
     "enable_admission_plugins", ("NamespaceLifecycle", "LimitRanger")),
    (["--requestheader-allowed-names=front,proxy"], "requestheader_allowed_names", ("front", "proxy")),
    (["--max-requests-inflight=10", "--profiling=false", "--tls-min-version=VersionTLS12"],
     "max_requests_inflight", 10),
]


@pytest.mark.parametrize(("flags", "attribute", "value"), MAPPED, ids=[f"{m[1]} {' '.join(m[0])}" for m in MAPPED])
def test_kube_flags_map_onto_serve(flags: list[str], attribute: str, value: object) -> None:
    args = commands.parse_args(kubeapiserver.serve_argv(kubeflags.parse([*ETCD, *flags])))
    assert getattr(args, attribute) == value


CONFIG_ERRORS: list[tuple[list[str], str]] = [
    ([], "[--etcd-servers must be specified]"),
    ([*ETCD, "--storage-backend=etcd2"], "--storage-backend invalid, allowed values: etcd3. If not specified, "
                                         "it will default to 'etcd3'"),
    ([*ETCD, "--authorization-mode=ABAC"], "authorization-mode 'ABAC' is not served by Capstan (it serves "
                                           "AlwaysAllow, AlwaysDeny, Node, RBAC, Webhook)"),
    ([*ETCD, "--enable-admission-plugins=Nope"], 'enable-admission-plugins plugin "Nope" is unknown'),
]


@pytest.mark.parametrize(("argv", "message"), CONFIG_ERRORS, ids=[c[1][:30] for c in CONFIG_ERRORS])
def test_refuses_what_cannot_be_served(argv: list[str], message: str) -> None:
    with pytest.raises(kubeapiserver.ConfigError) as refused:
        kubeapiserver.serve_argv(kubeflags.parse(argv))
    assert str(refused.value) == message


def run(*argv: str, script: bool = False) -> subprocess.CompletedProcess[str]:
    command = ([str(Path(sys.executable).parent / "capstan-kube-apiserver")] if script
               else [sys.executable, "-m", "capstan", "kube-apiserver"])
    return subprocess.run([*command, *argv], capture_output=True, text=True, timeout=60, cwd=ROOT)


# (argv, exit status, standard output's first line, standard error's first line)
COMMANDS: list[tuple[list[str], int, str, str]] = [
    (["--version"], 0, "Kubernetes v1.28.15", ""),
    (["--version=true"], 0, "Kubernetes v1.28.15", ""),
    (["--version=raw"], 0, 'version.Info{Major:"1", Minor:"28", GitVersion:"v1.28.15", '
                           f'GitCommit:"capstan-{CAPSTAN_VERSION}", GitTreeState:"clean", ', ""),
    (["--foo"], 1, "", "Error: unknown flag: --foo"),
    (["--insecure-port=0"], 1, "", "Error: unknown flag: --insecure-port"),
    (["--secure-port"], 1, "", "Error: flag needs an argument: --secure-port"),
    (["--secure-port=1"], 1, "", "Error: [--etcd-servers must be specified]"),
    ([*ETCD, "extra"], 1, "", 'Error: "capstan kube-apiserver" does not take any arguments, got ["extra"]'),
]


@pytest.mark.parametrize(("argv", "code", "out", "err"), COMMANDS, ids=[" ".join(c[0]) for c in COMMANDS])
def test_command_answers_as_kube_apiserver(argv: list[str], code: int, out: str, err: str) -> None:
    ran = run(*argv)
    first = (ran.stdout.splitlines() or [""])[0]
    assert (ran.returncode, first[:len(out)] if out else first, (ran.stderr.splitlines() or [""])[0]) == (
        code, out, err)


def test_help_lists_every_flag_where_envtest_greps() -> None:
    """envtest's CheckFlag: (?m)^\\s*--NAME\\b in `--help`; kube 1.28 has no --insecure-port."""
    import re

    ran = run("--help", script=True)
    assert ran.returncode == 0
    assert ran.stdout.startswith("The Kubernetes API server validates and configures data")
    listed = set(re.findall(r"(?m)^\s*(?:-\w, )?--([\w-]+)\b", ran.stdout))
    assert listed == set(kubeflags.FLAGS)
    for flag in ("service-account-signing-key-file", "etcd-servers", "cert-dir", "feature-gates"):
        assert re.search(rf"(?m)^\s*--{flag}\b", ran.stdout)
    assert re.search(r"(?m)^\s*--insecure-port\b", ran.stdout) is None
    assert "capstan-kube-apiserver [flags]" in ran.stdout  # the name it was started as


def test_flags_without_effect_are_named_for_the_log() -> None:
    parsed = kubeflags.parse([*ETCD, "--profiling=false", "--tls-min-version", "VersionTLS12", "--v=1",
                              "--allow-privileged"])
    assert kubeapiserver.without_effect(parsed) == [
        "flag --profiling=false accepted: it has no effect in Capstan",
        "flag --tls-min-version=VersionTLS12 accepted: it has no effect in Capstan",
        "flag --allow-privileged=true accepted: it has no effect in Capstan",
    ]


def test_every_honoured_flag_is_one_of_kubes() -> None:
    assert set(kubeflags.HONOURED) <= set(kubeflags.FLAGS)
    assert set(commands.AUTHORIZATION_MODES) == kubeapiserver.SUPPORTED_MODES
