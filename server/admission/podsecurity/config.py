"""The PodSecurity plugin's configuration from `--admission-control-config-file`: kube 1.28's
PodSecurityConfiguration (pod-security.admission.config.k8s.io v1, v1beta1 or v1alpha1), read, defaulted and
validated as k8s.io/pod-security-admission's loader and plugin do it.

- No configuration for the plugin is kube's default: every mode privileged:latest, no exemptions.
- Decoding is strict: an unknown field (`strict decoding error: unknown field "defaults.foo"`) or a value of the
  wrong JSON type refuses the file, as does a missing or unknown apiVersion/kind. An unset (or empty) level is
  privileged, an unset version latest.
- A level or version kube cannot parse refuses it as `PodSecurity configuration error: enforce: must be one of
  privileged, baseline, restricted`; an exempt namespace that is no DNS-1123 label, a runtime class that is no
  DNS-1123 subdomain, an empty username or a repeated exemption as `PodSecurity invalid: exemptions....`.
Every refusal is a ConfigError carrying kube-apiserver's text, with its `couldn't init admission plugin` or
`failed to initialize admission plugin` prefix; the server does not start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server.admission.config import AdmissionConfiguration, ConfigError, cannot_unmarshal, decode
from server.admission.podsecurity import NAME, Configuration, Exemptions
from server.admission.podsecurity.levels import PRIVILEGED, LevelVersion, Policy, parse_level, parse_version
from server.machinery.validation.names import FieldError, join_errors, name_is_dns_label, name_is_dns_subdomain

GROUP = "pod-security.admission.config.k8s.io"
VERSIONS = ("v1", "v1beta1", "v1alpha1")
KIND = "PodSecurityConfiguration"
# PodSecurityDefaults's fields, in the order kube's ToPolicy reports them.
_DEFAULT_FIELDS = ("enforce", "enforce-version", "audit", "audit-version", "warn", "warn-version")
# PodSecurityExemptions's fields, in the order kube's validation reports them.
_EXEMPTION_FIELDS = ("namespaces", "runtimeClasses", "usernames")


def from_admission(admission: AdmissionConfiguration) -> Configuration:
    """The plugin's configuration in an AdmissionConfiguration (kube's default where it has none)."""
    return load(admission.config_for(NAME))


def load(body: bytes | None) -> Configuration:
    """A PodSecurityConfiguration document (JSON or YAML); None or empty: kube's default configuration."""
    if not body:
        return Configuration()
    try:
        defaults, exemptions = _decode(body)
    except ConfigError as err:
        raise ConfigError(f'couldn\'t init admission plugin "{NAME}": {err}') from None
    policy, problems = _policy(defaults)
    if problems:
        text = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
        raise ConfigError(f'failed to initialize admission plugin "{NAME}": {NAME} configuration error: {text}')
    errs = _validate(exemptions)
    if errs:
        raise ConfigError(f'failed to initialize admission plugin "{NAME}": {NAME} invalid: {join_errors(errs)}')
    return Configuration(policy, Exemptions(usernames=frozenset(exemptions["usernames"]),
                                            namespaces=frozenset(exemptions["namespaces"]),
                                            runtime_classes=frozenset(exemptions["runtimeClasses"])))


def _decode(body: bytes) -> tuple[dict[str, str], dict[str, list[str]]]:
    doc = decode(body, {(f"{GROUP}/{version}", KIND) for version in VERSIONS})
    version = doc["apiVersion"].rsplit("/", 1)[1]
    unknown: list[str] = []  # in the document's order, as kube's strict decoder lists them
    defaults: dict[str, Any] = {}
    exemptions: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "defaults":
            defaults = _struct(value, f"{version}.PodSecurityDefaults", key, _DEFAULT_FIELDS, unknown,
                               lambda member, field: _string(member, "PodSecurityDefaults", field))
        elif key == "exemptions":
            exemptions = _struct(value, f"{version}.PodSecurityExemptions", key, _EXEMPTION_FIELDS, unknown,
                                 _strings)
        elif key not in ("apiVersion", "kind"):
            unknown.append(f'unknown field "{key}"')
    if unknown:
        raise ConfigError("strict decoding error: " + ", ".join(unknown))
    return ({key: str(defaults.get(key) or "") for key in _DEFAULT_FIELDS},
            {key: list(exemptions.get(key) or []) for key in _EXEMPTION_FIELDS})


def _struct(value: object, go_type: str, field: str, fields: tuple[str, ...], unknown: list[str],
            check: Callable[[object, str], None]) -> dict[str, Any]:
    """A nested struct's members, each checked; its unknown fields are added to `unknown`."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise cannot_unmarshal(value, "PodSecurityConfiguration", field, go_type)
    for key, member in value.items():
        if key in fields:
            check(member, f"{field}.{key}")
        else:
            unknown.append(f'unknown field "{field}.{key}"')
    return value


def _string(value: object, struct: str, field: str) -> None:
    if value is not None and not isinstance(value, str):
        raise cannot_unmarshal(value, struct, field, "string")


def _strings(value: object, field: str) -> None:
    if value is None:
        return
    if not isinstance(value, list):
        raise cannot_unmarshal(value, "PodSecurityExemptions", field, "[]string")
    for item in value:
        _string(item, "PodSecurityExemptions", field)


def _policy(defaults: dict[str, str]) -> tuple[Policy, list[str]]:
    """ToPolicy over the defaulted values (an unset level privileged, an unset version latest)."""
    problems: list[str] = []
    modes: list[LevelVersion] = []
    for mode in ("enforce", "audit", "warn"):
        level, error = parse_level(defaults[mode] or PRIVILEGED)
        if error:
            problems.append(f"{mode}: {error}")
        minor, error = parse_version(defaults[f"{mode}-version"] or "latest")
        if error:
            problems.append(f"{mode}-version: {error}")
        modes.append(LevelVersion(level, minor))
    return Policy(*modes), problems


def _validate(exemptions: dict[str, list[str]]) -> list[FieldError]:
    """ValidatePodSecurityConfiguration's exemption checks: each entry valid and named once."""
    checks: dict[str, Callable[[str], list[str]]] = {
        "namespaces": lambda name: name_is_dns_label(name, False),
        "runtimeClasses": lambda name: name_is_dns_subdomain(name, False),
        "usernames": lambda name: [] if name else ["username must not be empty"],
    }
    errs: list[FieldError] = []
    for key in _EXEMPTION_FIELDS:
        seen: set[str] = set()
        for i, name in enumerate(exemptions[key]):
            path = f"exemptions.{key}[{i}]"
            problems = checks[key](name)
            if problems:
                errs.append(FieldError.invalid(path, name, ", ".join(problems)))
            elif name in seen:
                errs.append(FieldError.duplicate(path, name))
            else:
                seen.add(name)
    return errs
