"""A PolicyRule as a value, and whether it allows a request (kube's RuleAllows and its matchers).

Matching, for a resource request: the verb is listed (or `*`); the API group is listed (or `*`); the resource
is listed (or `*`), a subresource request naming `resource/subresource` or `*/subresource`; and the rule names no
resources or names the requested one. For a non-resource request: the verb, and the path listed exactly, or a
listed path ending in `*` whose prefix (stars trimmed) starts the path. A rule of one kind never matches a
request of the other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from server.auth.attributes import Attributes

ALL = "*"


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str))


@dataclass(frozen=True, slots=True)
class PolicyRule:
    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    # What allows() reads, computed once from the fields above.
    _verbs: frozenset[str] = field(init=False, repr=False, compare=False)
    _groups: frozenset[str] = field(init=False, repr=False, compare=False)
    _resources: frozenset[str] = field(init=False, repr=False, compare=False)
    _star_subresources: frozenset[str] = field(init=False, repr=False, compare=False)
    _names: frozenset[str] = field(init=False, repr=False, compare=False)
    _urls: frozenset[str] = field(init=False, repr=False, compare=False)
    _url_prefixes: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "_verbs", frozenset(self.verbs))
        put(self, "_groups", frozenset(self.api_groups))
        put(self, "_resources", frozenset(self.resources))
        put(self, "_star_subresources", frozenset(r[2:] for r in self.resources if r.startswith("*/")))
        put(self, "_names", frozenset(self.resource_names))
        put(self, "_urls", frozenset(self.non_resource_urls))
        put(self, "_url_prefixes", tuple(u.rstrip("*") for u in self.non_resource_urls if u.endswith("*")))

    def allows(self, a: Attributes) -> bool:
        if a.verb not in self._verbs and ALL not in self._verbs:
            return False
        if not a.resource_request:
            path = a.path
            return path in self._urls or any(path.startswith(prefix) for prefix in self._url_prefixes)
        if a.api_group not in self._groups and ALL not in self._groups:
            return False
        resources = self._resources
        if ALL not in resources:
            if a.subresource:
                if f"{a.resource}/{a.subresource}" not in resources and a.subresource not in self._star_subresources:
                    return False
            elif a.resource not in resources:
                return False
        return not self._names or a.name in self._names

    def to_json(self) -> dict[str, list[str]]:
        """The rule as rbac.authorization.k8s.io/v1 spells it (empty fields left out)."""
        fields = (("apiGroups", self.api_groups), ("resources", self.resources),
                  ("resourceNames", self.resource_names), ("nonResourceURLs", self.non_resource_urls),
                  ("verbs", self.verbs))
        return {key: list(value) for key, value in fields if value}


def rule_of(value: object) -> PolicyRule:
    rule = value if isinstance(value, dict) else {}
    return PolicyRule(_strings(rule.get("verbs")), _strings(rule.get("apiGroups")), _strings(rule.get("resources")),
                      _strings(rule.get("resourceNames")), _strings(rule.get("nonResourceURLs")))


def rules_of(obj: dict[str, object]) -> tuple[PolicyRule, ...]:
    """The rules of a Role or ClusterRole object."""
    rules = obj.get("rules")
    return tuple(rule_of(rule) for rule in rules) if isinstance(rules, list) else ()


def allows_any(a: Attributes, rules: Iterable[PolicyRule]) -> bool:
    return any(rule.allows(a) for rule in rules)
