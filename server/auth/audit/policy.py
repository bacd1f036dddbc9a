"""The audit policy (audit.k8s.io/v1 Policy from --audit-policy-file): which requests are recorded at which level.

Contract (kube's policy/checker.go): rules are tried in order and the first that matches decides the level and
the stages left out; a request no rule matches is not recorded (level None). A rule matches when every field it
sets matches:
- users: the authenticated user's name; userGroups: any of its groups (a request that proves nobody, a 401,
  matches no rule that names users or groups);
- verbs: the kube verb (get, list, watch, create, ...; the lower-case HTTP verb for a non-resource path);
- resources / namespaces: only resource requests. `namespaces` lists namespaces, "" being the cluster scope;
  each resources entry names a group ("" core) and resources, where "pods/log" names a subresource, "*" any
  resource, "*/status" a subresource of any resource and "pods/*" any subresource of pods; resourceNames limits
  the entry to those object names;
- nonResourceURLs: only non-resource requests; "/healthz" exact, "/apis/*" a prefix, "*" any path.
omitStages of the policy and of the matching rule add up; omitManagedFields of a rule, when set, overrides the
policy's.

A policy file kube would refuse (unreadable, undecodable, invalid, no rules) raises PolicyError with kube's
words, and the server does not start.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.auth.attributes import Attributes
from server.machinery.codec import yamlread
from server.machinery.user import UserInfo

API_VERSION = "audit.k8s.io/v1"


class PolicyError(ValueError):
    """The policy file cannot be used: the message is kube's error for it."""


class Level(enum.IntEnum):
    """Ordered: a level records everything the ones below it do."""

    NONE = 0
    METADATA = 1
    REQUEST = 2
    REQUEST_RESPONSE = 3

    @property
    def wire(self) -> str:
        return _LEVEL_NAMES[self]


_LEVEL_NAMES = {Level.NONE: "None", Level.METADATA: "Metadata", Level.REQUEST: "Request",
                Level.REQUEST_RESPONSE: "RequestResponse"}
_LEVELS = {name: level for level, name in _LEVEL_NAMES.items()}
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")


@dataclass(frozen=True, slots=True)
class GroupResources:
    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Rule:
    level: Level
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """What the policy says about one request."""

    level: Level
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False


NOT_AUDITED = Decision(Level.NONE)


@dataclass(frozen=True, slots=True)
class Policy:
    rules: tuple[Rule, ...]
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False

    def decide(self, attributes: Attributes, user: UserInfo | None) -> Decision:
        """The first matching rule's level; `user` None is a request that proved nobody."""
        for rule in self.rules:
            if _matches(rule, attributes, user):
                managed = self.omit_managed_fields if rule.omit_managed_fields is None else rule.omit_managed_fields
                return Decision(rule.level, self.omit_stages | rule.omit_stages, managed)
        return Decision(Level.NONE, self.omit_stages, self.omit_managed_fields)


def _matches(rule: Rule, attributes: Attributes, user: UserInfo | None) -> bool:
    if rule.users and (user is None or user.name not in rule.users):
        return False
    if rule.user_groups and (user is None or not any(g in rule.user_groups for g in user.groups)):
        return False
    if rule.verbs and attributes.verb not in rule.verbs:
        return False
    if rule.namespaces or rule.resources:
        return _matches_resource(rule, attributes)
    if rule.non_resource_urls:
        return not attributes.resource_request and any(_path_matches(attributes.path, spec)
                                                       for spec in rule.non_resource_urls)
    return True


def _path_matches(path: str, spec: str) -> bool:
    return spec == "*" or spec == path or (spec.endswith("*") and path.startswith(spec.rstrip("*")))


def _matches_resource(rule: Rule, attributes: Attributes) -> bool:
    if not attributes.resource_request:
        return False
    if rule.namespaces and attributes.namespace not in rule.namespaces:
        return False
    if not rule.resources:
        return True
    resource, subresource = attributes.resource, attributes.subresource
    combined = f"{resource}/{subresource}" if subresource else resource
    for entry in rule.resources:
        if entry.group != attributes.api_group:
            continue
        if not entry.resources:
            return True
        if entry.resource_names and attributes.name not in entry.resource_names:
            continue
        for spec in entry.resources:
            if spec in (combined, "*"):
                return True
            if subresource and spec.startswith("*/") and spec[2:] == subresource:
                return True
            if spec.endswith("/*") and spec[:-2] == resource:
                return True
    return False


def load(path: Path) -> Policy:
    """The policy in a file, as kube's LoadPolicyFromFile reads and validates it."""
    try:
        body = path.read_bytes()
    except OSError as err:
        raise PolicyError(f"failed to read file path {str(path)!r}: {err.strerror or err}") from None
    try:
        return parse(body)
    except PolicyError as err:
        raise PolicyError(f"{err}: from file {path}") from None


def parse(body: bytes) -> Policy:
    try:
        doc = yamlread.load(body)
    except ValueError as err:
        raise PolicyError(f"failed decoding: {err}") from None
    if not isinstance(doc, dict):
        raise PolicyError("failed decoding: couldn't get version/kind; json parse error: the policy is not an object")
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if not kind:
        raise PolicyError(f"failed decoding: Object 'Kind' is missing in '{body.decode(errors='replace')}'")
    if api_version != API_VERSION or kind != "Policy":
        raise PolicyError(f"failed decoding: no kind \"{kind}\" is registered for version \"{api_version}\"")
    errors: list[str] = []
    policy = _read_policy(doc, errors)
    if errors:
        raise PolicyError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    if not policy.rules:
        raise PolicyError("loaded illegal policy with 0 rules")
    return policy


def _strings(value: Any, field: str, errors: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append(f"{field}: Invalid value: {value!r}: must be a list of strings")
        return ()
    return tuple(value)


def _go_strings(values: tuple[str, ...]) -> str:
    """A []string as Go's %#v prints it in a field error."""
    return "[]string{" + ", ".join(_go_quote(v) for v in values) + "}"


def _go_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _stages(value: Any, field: str, errors: list[str]) -> frozenset[str]:
    stages = _strings(value, field, errors)
    for i, stage in enumerate(stages):
        if stage not in STAGES:
            errors.append(f"{field}[{i}]: Invalid value: {_go_quote(stage)}: allowed stages are {','.join(STAGES)}")
    return frozenset(stages)


def _read_policy(doc: dict[str, Any], errors: list[str]) -> Policy:
    rules = doc.get("rules") or []
    if not isinstance(rules, list):
        errors.append("rules: Invalid value: must be a list")
        rules = []
    read = tuple(_read_rule(rule if isinstance(rule, dict) else {}, f"rules[{i}]", errors)
                 for i, rule in enumerate(rules))
    omit = _stages(doc.get("omitStages"), "omitStages", errors)
    return Policy(read, omit, bool(doc.get("omitManagedFields", False)))


_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _read_rule(rule: dict[str, Any], at: str, errors: list[str]) -> Rule:
    level_name = rule.get("level") or ""
    level = _LEVELS.get(level_name, Level.NONE)
    if not level_name:
        errors.append(f"{at}.level: Required value")
    elif level_name not in _LEVELS:
        supported = ", ".join(_go_quote(n) for n in _LEVELS)
        errors.append(f"{at}.level: Unsupported value: {_go_quote(str(level_name))}: supported values: {supported}")
    urls = _strings(rule.get("nonResourceURLs"), f"{at}.nonResourceURLs", errors)
    for i, url in enumerate(urls):
        if url == "*":
            continue
        if not url.startswith("/"):
            errors.append(f"{at}.nonResourceURLs[{i}]: Invalid value: {_go_quote(url)}: "
                          "non-resource URL rules must begin with a '/' character")
        if url and "*" in url[:-1]:
            errors.append(f"{at}.nonResourceURLs[{i}]: Invalid value: {_go_quote(url)}: "
                          "non-resource URL wildcards '*' must be the final character of the rule")
    resources = tuple(_read_resources(entry if isinstance(entry, dict) else {}, f"{at}.resources", errors)
                      for entry in (rule.get("resources") or []))
    omit = _stages(rule.get("omitStages"), f"{at}.omitStages", errors)
    namespaces = _strings(rule.get("namespaces"), f"{at}.namespaces", errors)
    if urls and (resources or namespaces):
        errors.append(f"{at}.nonResourceURLs: Invalid value: {_go_strings(urls)}: "
                      "rules cannot apply to both regular resources and non-resource URLs")
    managed = rule.get("omitManagedFields")
    return Rule(level, users=_strings(rule.get("users"), f"{at}.users", errors),
                user_groups=_strings(rule.get("userGroups"), f"{at}.userGroups", errors),
                verbs=_strings(rule.get("verbs"), f"{at}.verbs", errors), resources=resources,
                namespaces=namespaces, non_resource_urls=urls, omit_stages=omit,
                omit_managed_fields=None if managed is None else bool(managed))


def _read_resources(entry: dict[str, Any], at: str, errors: list[str]) -> GroupResources:
    group = entry.get("group") or ""
    if not isinstance(group, str):
        group = str(group)
    if group and (len(group) > 253 or not _DNS_SUBDOMAIN.fullmatch(group)):
        message = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                   "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                   "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
        if len(group) > 253:
            message = "must be no more than 253 characters"
        errors.append(f"{at}.group: Invalid value: {_go_quote(group)}: {message}")
    resources = _strings(entry.get("resources"), f"{at}.resources", errors)
    names = _strings(entry.get("resourceNames"), f"{at}.resourceNames", errors)
    if names and not resources:
        errors.append(f"{at}.resourceNames: Invalid value: {_go_strings(names)}: "
                      "using resourceNames requires at least one resource")
    return GroupResources(group, resources, names)
