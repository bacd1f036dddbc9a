"""Pod Security Standards' levels and versions, and the policy a namespace's labels choose
(k8s.io/pod-security-admission/api): `pod-security.kubernetes.io/<mode>` names a level (privileged, baseline,
restricted) and `pod-security.kubernetes.io/<mode>-version` a version (`latest` or `v1.<minor>`) for each of the
modes enforce, audit and warn, with kube's defaulting and its texts for labels it cannot parse.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from server.machinery.validation.names import FieldError

PRIVILEGED = "privileged"
BASELINE = "baseline"
RESTRICTED = "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)  # from the least to the most restrictive

LABEL_PREFIX = "pod-security.kubernetes.io/"
ENFORCE_LABEL = LABEL_PREFIX + "enforce"
ENFORCE_VERSION_LABEL = LABEL_PREFIX + "enforce-version"
AUDIT_LABEL = LABEL_PREFIX + "audit"
AUDIT_VERSION_LABEL = LABEL_PREFIX + "audit-version"
WARN_LABEL = LABEL_PREFIX + "warn"
WARN_VERSION_LABEL = LABEL_PREFIX + "warn-version"

_LEVEL_ERROR = "must be one of " + ", ".join(LEVELS)
_VERSION_ERROR = 'must be "latest" or "v1.x"'
_VERSION = re.compile(r"v1\.([0-9]|[1-9][0-9]*)")
_MAX_INT64 = 2**63 - 1


@dataclass(frozen=True, slots=True)
class LevelVersion:
    """A level at a version; minor None is `latest` (newer than every numbered version)."""

    level: str
    minor: int | None = None

    def __str__(self) -> str:
        return f"{self.level}:{version_text(self.minor)}"

    def equivalent(self, other: LevelVersion) -> bool:
        return (self.level == PRIVILEGED and other.level == PRIVILEGED) or self == other


@dataclass(frozen=True, slots=True)
class Policy:
    enforce: LevelVersion
    audit: LevelVersion
    warn: LevelVersion

    def fully_privileged(self) -> bool:
        return PRIVILEGED == self.enforce.level == self.audit.level == self.warn.level

    def equivalent(self, other: Policy) -> bool:
        return (self.enforce.equivalent(other.enforce) and self.audit.equivalent(other.audit)
                and self.warn.equivalent(other.warn))


PRIVILEGED_LATEST = LevelVersion(PRIVILEGED)
# kube's default PodSecurityConfiguration: every mode privileged:latest.
DEFAULT_POLICY = Policy(PRIVILEGED_LATEST, PRIVILEGED_LATEST, PRIVILEGED_LATEST)


def version_text(minor: int | None) -> str:
    return "latest" if minor is None else f"v1.{minor}"


def compare_levels(a: str, b: str) -> int:
    """<0, 0 or >0 as level a is less, as or more restrictive than b."""
    return LEVELS.index(a) - LEVELS.index(b)


def parse_level(text: str) -> tuple[str, str]:
    """The level and "" or, for a text that is none, restricted and kube's error."""
    return (text, "") if text in LEVELS else (RESTRICTED, _LEVEL_ERROR)


def parse_version(text: str) -> tuple[int | None, str]:
    """The minor version (None: latest) and "" or, for a text kube cannot parse, latest and its error."""
    if text == "latest":
        return None, ""
    match = _VERSION.fullmatch(text)
    if match is None or int(match[1]) > _MAX_INT64:
        return None, _VERSION_ERROR
    return int(match[1]), ""


def _label_error(label: str, value: str, error: str) -> FieldError:
    return FieldError.invalid(f"metadata.labels[{label}]", value, error)


def _mode(labels: Mapping[str, str], level_label: str, version_label: str, default: LevelVersion, failed: str,
          errs: list[FieldError]) -> LevelVersion:
    """One mode's level and version from its labels over the default; a bad level is `failed`, a bad version
    latest, each with its error appended to errs."""
    level, minor = default.level, default.minor
    if level_label in labels:
        level, error = parse_level(labels[level_label])
        if error:
            level = failed
            errs.append(_label_error(level_label, labels[level_label], error))
    if version_label in labels:
        minor, error = parse_version(labels[version_label])
        if error:
            errs.append(_label_error(version_label, labels[version_label], error))
    return LevelVersion(level, minor)


def policy_to_evaluate(labels: Mapping[str, str], defaults: Policy) -> tuple[Policy, list[FieldError]]:
    """PolicyToEvaluate: the labels over the defaults, and an error per label kube cannot parse. A bad enforce
    level enforces restricted (fails closed); a bad audit or warn level is privileged (fails open); a bad version
    is latest. Without a warn label, warn is at least as strict as a valid enforce label's level (and its version
    without a warn-version label)."""
    if not labels:
        return defaults, []
    errs: list[FieldError] = []
    enforce = _mode(labels, ENFORCE_LABEL, ENFORCE_VERSION_LABEL, defaults.enforce, RESTRICTED, errs)
    has_enforce_level = ENFORCE_LABEL in labels and labels[ENFORCE_LABEL] in LEVELS
    audit = _mode(labels, AUDIT_LABEL, AUDIT_VERSION_LABEL, defaults.audit, PRIVILEGED, errs)
    warn = _mode(labels, WARN_LABEL, WARN_VERSION_LABEL, defaults.warn, PRIVILEGED, errs)
    if WARN_LABEL not in labels and has_enforce_level and compare_levels(enforce.level, warn.level) > 0:
        warn = LevelVersion(enforce.level, warn.minor if WARN_VERSION_LABEL in labels else enforce.minor)
    return Policy(enforce, audit, warn), errs
