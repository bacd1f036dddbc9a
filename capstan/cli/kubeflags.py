"""kube-apiserver 1.28's command line as data, and a parser that reads it as spf13/pflag (under cobra, with kube's
word-separator normalization) does: what `capstan kube-apiserver` and the `capstan-kube-apiserver` script accept.

Contract of `parse` (pflag's rules):
- `--name=value`, or `--name value` for a flag that takes a value (the next word, whatever it starts with);
  a bool flag takes no separate value: `--name` is true, `--name=false` false (Go's strconv.ParseBool words);
- shorthands `-v 3`, `-v=3`, `-v3` and `-h`; `--` ends the flags; `_` in a name reads as `-`;
- a list flag (`strings`) splits each value on commas and a repeat appends; a `stringArray` keeps each value
  whole; a map flag (`mapStringBool`, `mapStringString`, `stringToString`) merges its `key=value` pairs;
  any other flag repeated keeps its last value;
- an unknown flag, a flag without its value and a value its type refuses are `FlagError`s with pflag's texts
  (`unknown flag: --foo`), printed by the caller as cobra's `Error: ...` with exit status 1.

The table is kube 1.28's flags by the sections of its `--help`. `HONOURED` names those Capstan gives a meaning
(capstan/cli/kubeapiserver.py maps them onto `capstan serve`); every other flag is accepted, type-checked and
logged at verbosity 1 as having no effect.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# Section title -> "name type default" lines, in kube-apiserver 1.28's --help order. A default of "-" is none.
_TABLE: dict[str, str] = {
    "Generic flags": """
        advertise-address ip -
        aggregator-reject-forwarding-redirect bool true
        cloud-config string -
        cloud-provider string -
        cloud-provider-gce-l7lb-src-cidrs cidrs 130.211.0.0/22,35.191.0.0/16
        cloud-provider-gce-lb-src-cidrs cidrs 130.211.0.0/22,209.85.152.0/22,209.85.204.0/22,35.191.0.0/16
        cors-allowed-origins strings -
        default-not-ready-toleration-seconds int 300
        default-unreachable-toleration-seconds int 300
        enable-priority-and-fairness bool true
        external-hostname string -
        feature-gates mapStringBool -
        goaway-chance float -
        livez-grace-period duration -
        max-mutating-requests-inflight int 200
        max-requests-inflight int 400
        min-request-timeout int 1800
        request-timeout duration 1m0s
        shutdown-delay-duration duration -
        shutdown-send-retry-after bool false
        shutdown-watch-termination-grace-period duration -
        strict-transport-security-directives strings -
    """,
    "Etcd flags": """
        default-watch-cache-size int 100
        delete-collection-workers int 1
        enable-garbage-collector bool true
        encryption-provider-config string -
        encryption-provider-config-automatic-reload bool false
        etcd-cafile string -
        etcd-certfile string -
        etcd-compaction-interval duration 5m0s
        etcd-count-metric-poll-period duration 1m0s
        etcd-db-metric-poll-interval duration 30s
        etcd-healthcheck-timeout duration 2s
        etcd-keyfile string -
        etcd-prefix string /registry
        etcd-readycheck-timeout duration 2s
        etcd-servers strings -
        etcd-servers-overrides strings -
        lease-reuse-duration-seconds int 60
        storage-backend string -
        storage-media-type string application/vnd.kubernetes.protobuf
        watch-cache bool true
        watch-cache-sizes strings -
    """,
    "Secure serving flags": """
        bind-address ip 0.0.0.0
        cert-dir string /var/run/kubernetes
        http2-max-streams-per-connection int -
        permit-address-sharing bool false
        permit-port-sharing bool false
        secure-port int 6443
        tls-cert-file string -
        tls-cipher-suites strings -
        tls-min-version string -
        tls-private-key-file string -
        tls-sni-cert-key namedCertKey -
    """,
    "Auditing flags": """
        audit-log-batch-buffer-size int 10000
        audit-log-batch-max-size int 1
        audit-log-batch-max-wait duration -
        audit-log-batch-throttle-burst int -
        audit-log-batch-throttle-enable bool false
        audit-log-batch-throttle-qps float -
        audit-log-compress bool false
        audit-log-format string json
        audit-log-maxage int -
        audit-log-maxbackup int -
        audit-log-maxsize int -
        audit-log-mode string blocking
        audit-log-path string -
        audit-log-truncate-enabled bool false
        audit-log-truncate-max-batch-size int 10485760
        audit-log-truncate-max-event-size int 102400
        audit-log-version string audit.k8s.io/v1
        audit-policy-file string -
        audit-webhook-batch-buffer-size int 10000
        audit-webhook-batch-max-size int 400
        audit-webhook-batch-max-wait duration 30s
        audit-webhook-batch-throttle-burst int 15
        audit-webhook-batch-throttle-enable bool true
        audit-webhook-batch-throttle-qps float 10
        audit-webhook-config-file string -
        audit-webhook-initial-backoff duration 10s
        audit-webhook-mode string batch
        audit-webhook-truncate-enabled bool false
        audit-webhook-truncate-max-batch-size int 10485760
        audit-webhook-truncate-max-event-size int 102400
        audit-webhook-version string audit.k8s.io/v1
    """,
    "Features flags": """
        contention-profiling bool false
        debug-socket-path string -
        profiling bool true
    """,
    "Authentication flags": """
        anonymous-auth bool true
        api-audiences strings -
        authentication-token-webhook-cache-ttl duration 2m0s
        authentication-token-webhook-config-file string -
        authentication-token-webhook-version string v1beta1
        client-ca-file string -
        enable-bootstrap-token-auth bool false
        oidc-ca-file string -
        oidc-client-id string -
        oidc-groups-claim string -
        oidc-groups-prefix string -
        oidc-issuer-url string -
        oidc-required-claim mapStringString -
        oidc-signing-algs strings RS256
        oidc-username-claim string sub
        oidc-username-prefix string -
        requestheader-allowed-names strings -
        requestheader-client-ca-file string -
        requestheader-extra-headers-prefix strings -
        requestheader-group-headers strings -
        requestheader-username-headers strings -
        service-account-extend-token-expiration bool true
        service-account-issuer stringArray -
        service-account-jwks-uri string -
        service-account-key-file stringArray -
        service-account-lookup bool true
        service-account-max-token-expiration duration -
        token-auth-file string -
    """,
    "Authorization flags": """
        authorization-mode strings -
        authorization-policy-file string -
        authorization-webhook-cache-authorized-ttl duration 5m0s
        authorization-webhook-cache-unauthorized-ttl duration 30s
        authorization-webhook-config-file string -
        authorization-webhook-version string v1beta1
    """,
    "API enablement flags": """
        runtime-config mapStringString -
    """,
    "Egress selector flags": """
        egress-selector-config-file string -
    """,
    "Admission flags": """
        admission-control strings -
        admission-control-config-file string -
        disable-admission-plugins strings -
        enable-admission-plugins strings -
    """,
    "Metrics flags": """
        allow-metric-labels stringToString -
        allow-metric-labels-manifest string -
        disabled-metrics strings -
        show-hidden-metrics-for-version string -
    """,
    "Logs flags": """
        log-flush-frequency duration 5s
        log-json-info-buffer-size quantity 0
        log-json-split-stream bool false
        logging-format string text
        v level 0
        vmodule pattern=N -
    """,
    "Traces flags": """
        tracing-config-file string -
    """,
    "Misc flags": """
        allow-privileged bool false
        apiserver-count int 1
        enable-aggregator-routing bool false
        enable-logs-handler bool true
        endpoint-reconciler-type string lease
        event-ttl duration 1h0m0s
        identity-lease-duration-seconds int 3600
        identity-lease-renew-interval-seconds int 10
        kubelet-certificate-authority string -
        kubelet-client-certificate string -
        kubelet-client-key string -
        kubelet-preferred-address-types strings Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP
        kubelet-timeout duration 5s
        kubernetes-service-node-port int -
        max-connection-bytes-per-sec int -
        peer-advertise-ip string -
        peer-advertise-port string -
        peer-ca-file string -
        proxy-client-cert-file string -
        proxy-client-key-file string -
        service-account-signing-key-file string -
        service-cluster-ip-range string -
        service-node-port-range portRange 30000-32767
    """,
    "Global flags": """
        azure-container-registry-config string -
        help bool false
        version version false
    """,
}

# What Capstan does with the flags it gives a meaning to (capstan/cli/kubeapiserver.py maps them onto `capstan
# serve`); every other flag is accepted and logged.
HONOURED: Mapping[str, str] = {
    "admission-control-config-file": "An AdmissionConfiguration; its PodSecurity plugin's configuration is read.",
    "advertise-address": "The address the kubernetes Service's Endpoints name.",
    "anonymous-auth": "Requests with no credential run as system:anonymous.",
    "audit-log-maxbackup": "Rotated audit files kept (0: all).",
    "audit-log-maxsize": "Megabytes before the audit log rotates (0: never).",
    "audit-log-path": "Audit events as JSON lines to this file; '-' is standard output.",
    "audit-policy-file": "The audit.k8s.io/v1 Policy.",
    "authorization-mode": "Ordered list of Node, RBAC, Webhook, AlwaysAllow, AlwaysDeny.",
    "authentication-token-webhook-cache-ttl": "How long the token webhook's answers are cached.",
    "authentication-token-webhook-config-file": "A kubeconfig for the TokenReview webhook.",
    "authentication-token-webhook-version": "The TokenReview version sent: v1 or v1beta1.",
    "authorization-webhook-cache-authorized-ttl": "How long the authorization webhook's allowances are cached.",
    "authorization-webhook-cache-unauthorized-ttl": "How long its refusals are cached.",
    "authorization-webhook-config-file": "A kubeconfig for the SubjectAccessReview webhook.",
    "authorization-webhook-version": "The SubjectAccessReview version sent: v1 or v1beta1.",
    "event-ttl": "How long an Event is kept after its last write.",
    "oidc-ca-file": "CA bundle verifying the OIDC issuer.",
    "oidc-client-id": "The audience ID tokens must be for.",
    "oidc-groups-claim": "The claim listing the user's groups.",
    "oidc-groups-prefix": "Prefixed to every group from OIDC.",
    "oidc-issuer-url": "The OpenID Connect issuer (https): ID tokens it signs authenticate.",
    "oidc-required-claim": "key=value claims an ID token must carry; repeatable.",
    "oidc-signing-algs": "The algorithms ID tokens may be signed with.",
    "oidc-username-claim": "The claim that is the username.",
    "oidc-username-prefix": "Prefixed to usernames from OIDC ('-': none).",
    "bind-address": "The IP address to serve HTTPS on.",
    "cert-dir": "Where apiserver.crt/apiserver.key are read as given, or generated with their CA when absent.",
    "client-ca-file": "CA bundle that authenticates client certificates (CN user, O groups).",
    "disable-admission-plugins": "Admission plugins to turn off, even those on by default.",
    "enable-admission-plugins": "Admission plugins to turn on beside kube 1.28's defaults.",
    "enable-priority-and-fairness": "Queue requests fairly per flow over the in-flight limits.",
    "etcd-cafile": "CA bundle verifying the etcd servers.",
    "etcd-certfile": "Client certificate presented to etcd.",
    "etcd-keyfile": "Its key.",
    "etcd-prefix": "The prefix of every key in etcd.",
    "etcd-servers": "etcd members' client URLs: where every object is stored (required).",
    "feature-gates": "kube 1.28's feature gates (an unknown gate is an error).",
    "max-mutating-requests-inflight": "Mutating requests served at once (0: no limit).",
    "max-requests-inflight": "Read-only requests served at once (0: no limit).",
    "proxy-client-cert-file": "Client certificate presented to extension API servers.",
    "proxy-client-key-file": "Its key.",
    "requestheader-allowed-names": "Front proxies' common names trusted for X-Remote-* headers.",
    "requestheader-client-ca-file": "CA bundle for front proxies' client certificates.",
    "runtime-config": "Group versions to serve beyond the defaults (group/version=true, api/all, api/beta, ...).",
    "secure-port": "The HTTPS port.",
    "service-account-issuer": "The iss of service account tokens (the first is used to sign).",
    "service-account-key-file": "PEM keys or certificates verifying service account tokens; repeatable.",
    "service-account-signing-key-file": "The private key signing service account tokens.",
    "service-cluster-ip-range": "The CIDR Services' cluster IPs come from (the first, if two are given).",
    "storage-backend": "The storage backend: etcd3, the only one.",
    "tls-cert-file": "The serving certificate (chain).",
    "tls-private-key-file": "Its key.",
    "token-auth-file": "Static bearer tokens (kube's CSV).",
    "v": "Log verbosity: 1 logs the start-up configuration and each accepted flag without effect.",
    "watch-cache": "Serve reads and watches' initial state from memory.",
    "help": "help for kube-apiserver",
    "version": "--version, --version=raw prints version information and quits",
}

SHORTHANDS = {"h": "help", "v": "v"}
# pflag's NoOptDefVal: what the flag means when named without `=value`
NO_VALUE = {"bool": "true", "version": "true"}
LISTS = frozenset({"strings", "cidrs"})
ARRAYS = frozenset({"stringArray", "namedCertKey"})
MAPS = frozenset({"mapStringBool", "mapStringString", "stringToString"})
# component-base's ConfigurationMap (its Type() is mapStringString): a key without `=value` is the key set to ""
# (`--runtime-config=api/v1`), where MapStringString refuses a pair without `=`.
CONFIGURATION_MAPS = frozenset({"runtime-config"})
GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_DURATION = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


@dataclass(frozen=True, slots=True)
class Flag:
    name: str
    kind: str  # pflag's type name, as `--help` prints it
    default: str | None
    section: str


def _flags() -> dict[str, Flag]:
    flags: dict[str, Flag] = {}
    for section, lines in _TABLE.items():
        for line in lines.split("\n"):
            if line.strip():
                name, kind, default = line.split()
                flags.setdefault(name, Flag(name, kind, None if default == "-" else default, section))
    return flags


FLAGS: Mapping[str, Flag] = _flags()


class FlagError(ValueError):
    """A command line pflag refuses; the message is pflag's."""


@dataclass
class Parsed:
    """The flags given, each with its values in order as typed, and the words that are not flags."""

    given: dict[str, list[str]] = field(default_factory=dict)
    positional: list[str] = field(default_factory=list)

    def has(self, name: str) -> bool:
        return name in self.given

    def last(self, name: str) -> str | None:
        values = self.given.get(name)
        return values[-1] if values else None

    def boolean(self, name: str) -> bool:
        value = self.last(name)
        if value is None:
            default = FLAGS[name].default
            return default == "true"
        return value in GO_TRUE

    def items(self, name: str) -> list[str]:
        """A list flag's items: each value split on commas (a stringArray's values whole)."""
        values = self.given.get(name, [])
        if FLAGS[name].kind in ARRAYS:
            return list(values)
        return [item.strip() for value in values for item in _split(value)]

    def pairs(self, name: str) -> dict[str, str]:
        """A map flag's key=value pairs, merged over repeats."""
        merged: dict[str, str] = {}
        for value in self.given.get(name, []):
            for item in _split(value):
                key, _, val = item.partition("=")
                merged[key.strip()] = val.strip()
        return merged

    def verbosity(self) -> int:
        return int(self.last("v") or 0)


def _split(value: str) -> list[str]:
    """pflag's comma split of a list value (encoding/csv's, without quotes in practice); "" is no item."""
    return [] if value == "" else value.split(",")


def normalize(name: str) -> str:
    """kube's WordSepNormalizeFunc: `_` reads as `-`."""
    return name.replace("_", "-")


def parse(argv: Sequence[str]) -> Parsed:
    """`argv` (the words after the program name) read as pflag reads kube-apiserver's; FlagError otherwise."""
    parsed = Parsed()
    words = list(argv)
    while words:
        word = words.pop(0)
        if word == "--":
            parsed.positional.extend(words)
            break
        if word.startswith("--") and len(word) > 2:
            _long(word[2:], words, parsed)
        elif word.startswith("-") and len(word) > 1:
            _short(word[1:], words, parsed)
        else:
            parsed.positional.append(word)
    return parsed


def _long(body: str, words: list[str], parsed: Parsed) -> None:
    raw, eq, value = body.partition("=")
    if raw.startswith("-") or raw.startswith("="):
        raise FlagError(f"bad flag syntax: --{body}")
    name = normalize(raw)
    flag = FLAGS.get(name)
    if flag is None:
        raise FlagError(f"unknown flag: --{raw}")
    if not eq:
        if flag.kind in NO_VALUE:
            value = NO_VALUE[flag.kind]
        elif words:
            value = words.pop(0)
        else:
            raise FlagError(f"flag needs an argument: --{raw}")
    _set(flag, value, parsed, f"--{raw}")


def _short(body: str, words: list[str], parsed: Parsed) -> None:
    rest = body
    while rest:
        letter, rest = rest[0], rest[1:]
        name = SHORTHANDS.get(letter)
        if name is None:
            raise FlagError(f"unknown shorthand flag: {letter!r} in -{body}")
        flag = FLAGS[name]
        if rest.startswith("="):
            value, rest = rest[1:], ""
        elif flag.kind in NO_VALUE:
            value = NO_VALUE[flag.kind]
        elif rest:
            value, rest = rest, ""
        elif words:
            value = words.pop(0)
        else:
            raise FlagError(f"flag needs an argument: {letter!r} in -{body}")
        _set(flag, value, parsed, f"-{letter}, --{flag.name}")


def _set(flag: Flag, value: str, parsed: Parsed, shown: str) -> None:
    problem = _check(flag, value)
    if problem is not None:
        raise FlagError(f'invalid argument "{value}" for "{shown}" flag: {problem}')
    parsed.given.setdefault(flag.name, []).append(value)


def _check(flag: Flag, value: str) -> str | None:
    """pflag's refusal of `value` for the flag's type, or None."""
    kind = flag.kind
    if kind == "bool" and value not in GO_TRUE | GO_FALSE:
        return f'strconv.ParseBool: parsing "{value}": invalid syntax'
    if kind == "version" and value not in GO_TRUE | GO_FALSE | {"raw"}:
        return f'strconv.ParseBool: parsing "{value}": invalid syntax'
    if kind in ("int", "level") and not re.fullmatch(r"[-+]?\d+", value):
        return f'strconv.ParseInt: parsing "{value}": invalid syntax'
    if kind == "ip" and not _is_ip(value):
        return f'failed to parse IP: "{value}"'
    if kind == "float" and not re.fullmatch(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?", value):
        return f'strconv.ParseFloat: parsing "{value}": invalid syntax'
    if kind == "duration" and not _is_duration(value):
        return f'time: invalid duration "{value}"'
    if kind == "mapStringBool":
        for item in _split(value):
            key, eq, val = item.partition("=")
            if not eq:
                return f"missing bool value for {key}"
            if val.strip() not in GO_TRUE | GO_FALSE:
                return f"invalid value of {key}={val.strip()}, err: strconv.ParseBool: parsing \"{val.strip()}\": " \
                       "invalid syntax"
    if kind == "mapStringString" and flag.name not in CONFIGURATION_MAPS:
        for item in _split(value):
            if "=" not in item:
                return "malformed pair, expect string=string"
    if kind == "stringToString":
        for item in _split(value):
            if "=" not in item:
                return f"{item} must be formatted as key=value"
    return None


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _is_duration(value: str) -> bool:
    """Go's time.ParseDuration: "0", or one or more number-unit terms."""
    if value in ("0", "+0", "-0"):
        return True
    text = value.lstrip("+-") if value[:1] in "+-" else value
    if not text:
        return False
    while text:
        match = _DURATION.match(text)
        if match is None:
            return False
        text = text[match.end():]
    return True


def usage(program: str, description: str) -> str:
    """`--help`: kube's layout, a section per group of flags, each line `--name type   text`, so that tools
    which grep the help for a flag (envtest's `^\\s*--flag\\b`) find exactly the flags accepted here."""
    out = [description, "", "Usage:", f"  {program} [flags]", ""]
    by_section: dict[str, list[Flag]] = {}
    for flag in FLAGS.values():
        by_section.setdefault(flag.section, []).append(flag)
    for section, flags in by_section.items():
        out.append(f"{section}:")
        out.append("")
        lines = [(_shown(flag), _text(flag)) for flag in flags]
        width = max(len(left) for left, _ in lines)
        out.extend(f"  {left.ljust(width)}   {text}".rstrip() for left, text in lines)
        out.append("")
    return "\n".join(out) + "\n"


def _shown(flag: Flag) -> str:
    short = next((letter for letter, name in SHORTHANDS.items() if name == flag.name), None)
    lead = f"-{short}, " if short else "    "
    kind = {"bool": "", "version": "version[=true]", "level": "Level",
            "mapStringBool": "mapStringBool", "mapStringString": "mapStringString"}.get(flag.kind, flag.kind)
    return f"{lead}--{flag.name}{' ' + kind if kind else ''}"


def _text(flag: Flag) -> str:
    what = HONOURED.get(flag.name, "Accepted as kube-apiserver 1.28's; no effect in Capstan.")
    if flag.default is not None and flag.kind not in ("bool", "version"):
        what = f"{what} (default {flag.default})".strip()
    elif flag.kind == "bool" and flag.default == "true":
        what = f"{what} (default true)".strip()
    return what
