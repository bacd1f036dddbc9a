"""kube-apiserver's `--feature-gates` and `--runtime-config`, read as kube 1.28 reads them, into what a core
serves: the group versions that are off by default and turned on (admissionregistration.k8s.io v1beta1 and
v1alpha1, the ValidatingAdmissionPolicy kinds) and the feature gates that change behaviour here.

    --feature-gates=ValidatingAdmissionPolicy=true
    --runtime-config=admissionregistration.k8s.io/v1beta1=true,admissionregistration.k8s.io/v1alpha1

A key without a value is true; `api/all`, `api/ga`, `api/beta` and `api/alpha` turn whole levels on or off.
Errors are kube's texts (ValueError): an unknown gate (`unrecognized feature gate: Foo`), a value that is no
Go bool, a group kube does not serve (`unknown api groups foo.example.com`), a version of a known group that
is not registered (`group version apps/v2 that has not been registered`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from server.kinds import BUILTIN, admissionpolicies
from server.kinds.admissionregistration import GROUP

# kube 1.28's feature gates Capstan reads, with their defaults; the others kube 1.28 knows are accepted and
# change nothing here.
GATES: Mapping[str, bool] = {
    admissionpolicies.FEATURE_GATE: False,
    "AdmissionWebhookMatchConditions": True,
    "AggregatedDiscoveryEndpoint": True,
    "APIListChunking": True,
    "APIResponseCompression": True,
    "CustomResourceValidationExpressions": True,
    "ServerSideApply": True,
    "ServerSideFieldValidation": True,
    "ValidatingAdmissionPolicyStatus": True,
    "WatchList": False,
    "ConsistentListFromCache": False,
    "KMSv2": True,
    "CRDValidationRatcheting": False,
    "OpenAPIEnums": True,
    "StorageVersionAPI": False,
    "APIPriorityAndFairness": True,
    "AllAlpha": False,
    "AllBeta": False,
}
# Group versions kube 1.28 serves only when --runtime-config turns them on.
OFF_BY_DEFAULT = tuple(f"{GROUP}/{v}" for v in admissionpolicies.VERSIONS)
_LEVELS = {"api/all": ("", "alpha", "beta"), "api/ga": ("",), "api/beta": ("beta",), "api/alpha": ("alpha",)}


@dataclass(frozen=True, slots=True)
class ApiEnablement:
    """What the two flags turned on: the off-by-default group versions served, and every gate's value."""

    group_versions: frozenset[str] = frozenset()
    gates: Mapping[str, bool] = field(default_factory=lambda: dict(GATES))

    def gate(self, name: str) -> bool:
        return bool(self.gates.get(name, False))


DEFAULT = ApiEnablement()


def _go_bool(value: str, what: str) -> bool:
    """strconv.ParseBool, with kube's error around it (`what`: the text before ", err: ")."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f'invalid value of {what}, err: strconv.ParseBool: parsing "{value}": invalid syntax')


def _pairs(text: str) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, eq, value = item.partition("=")
        out.append((key.strip(), value.strip() if eq else None))
    return out


def feature_gates(texts: Iterable[str]) -> dict[str, bool]:
    """--feature-gates (each occurrence adds to the map), as featuregate.Set parses it."""
    gates = dict(GATES)
    for text in texts:
        for key, value in _pairs(text):
            if value is None:
                raise ValueError(f"missing bool value for {key}")
            if key not in GATES:
                raise ValueError(f"unrecognized feature gate: {key}")
            gates[key] = _go_bool(value, f"{key}={value}")
    return gates


def _level(version: str) -> str:
    return "alpha" if "alpha" in version else "beta" if "beta" in version else ""


def runtime_config(texts: Iterable[str], gates: Mapping[str, bool] | None = None) -> ApiEnablement:
    """--runtime-config (and the gates), as APIEnablementOptions.Validate and MergeAPIResourceConfigs read it."""
    known = {(r.group, r.version) for r in BUILTIN} | {("", "v1")}
    known |= {tuple(gv.split("/", 1)) for gv in OFF_BY_DEFAULT}  # type: ignore[misc]
    groups = {g for g, _ in known}
    enabled: set[str] = set()
    pairs = [pair for text in texts for pair in _pairs(text)]
    if [k for k, v in pairs] == ["api/all"] and pairs[0][1] == "false":
        raise ValueError("invalid key with only api/all=false")
    unknown: list[str] = []
    for key, value in pairs:
        on = True if value is None or value == "" else _go_bool(value, f"{key}: {value}")
        if key in _LEVELS:
            for gv in OFF_BY_DEFAULT:
                if _level(gv.rsplit("/", 1)[1]) in _LEVELS[key]:
                    (enabled.add if on else enabled.discard)(gv)
            continue
        tokens = key.split("/")
        if len(tokens) not in (2, 3):
            raise ValueError(f"runtime-config invalid key {key}")
        group, version = ("", tokens[1]) if tokens[0] == "api" else (tokens[0], tokens[1])
        if group not in groups:
            unknown.append(group)
            continue
        if (group, version) not in known:
            raise ValueError(f"group version {key if not group else f'{group}/{version}'} that has not been "
                             "registered")
        gv = f"{group}/{version}" if group else version
        if gv in OFF_BY_DEFAULT:
            (enabled.add if on else enabled.discard)(gv)
    if unknown:
        raise ValueError(f"unknown api groups {','.join(unknown)}")
    return ApiEnablement(frozenset(enabled), dict(gates if gates is not None else GATES))
