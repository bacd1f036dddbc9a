"""Whether one set of rules grants everything another does (kube's validation.Covers), and how kube words
what is missing in an escalation refusal (CompactRules, CompactString).

Covers breaks every servant rule into atomic rules (one group, resource, verb and at most one name; a URL
and a verb), each of which one owner rule covers or none does:

    owner {APIGroups:[""], Resources:["*/status"], Verbs:["get"]} covers pods/status get, not pods get
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from server.auth.rbac.rules import ALL, PolicyRule
from server.machinery.validation.names import go_quote


def breakdown(rule: PolicyRule) -> list[PolicyRule]:
    atoms = [PolicyRule((verb,), (group,), (resource,), (name,) if name is not None else ())
             for group in rule.api_groups for resource in rule.resources for verb in rule.verbs
             for name in (rule.resource_names or (None,))]
    atoms += [PolicyRule((verb,), non_resource_urls=(url,)) for url in rule.non_resource_urls for verb in rule.verbs]
    return atoms


def _resource_covers(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    if ALL in owned:
        return True
    for resource in wanted:
        if resource in owned:
            continue
        if "/" not in resource or "*/" + resource.split("/", 1)[1] not in owned:
            return False
    return True


def _url_covers(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    return all(any(o == w or (o.endswith("*") and w.startswith(o.rstrip("*"))) for o in owned) for w in wanted)


def _rule_covers(owner: PolicyRule, atom: PolicyRule) -> bool:
    if not (ALL in owner.verbs or set(atom.verbs) <= set(owner.verbs)):
        return False
    if not (ALL in owner.api_groups or set(atom.api_groups) <= set(owner.api_groups)):
        return False
    if not _resource_covers(owner.resources, atom.resources) or not _url_covers(owner.non_resource_urls,
                                                                                 atom.non_resource_urls):
        return False
    if not atom.resource_names:
        return not owner.resource_names
    return not owner.resource_names or set(atom.resource_names) <= set(owner.resource_names)


def uncovered(owner: Sequence[PolicyRule], servant: Iterable[PolicyRule]) -> list[PolicyRule]:
    """The atomic servant rules no owner rule covers (empty: the owner covers the servant)."""
    return [atom for rule in servant for atom in breakdown(rule) if not any(_rule_covers(o, atom) for o in owner)]


def compact(rules: Iterable[PolicyRule]) -> list[PolicyRule]:
    """kube's CompactRules: rules of one group, one resource and at most one name merge their verbs; the
    others stay as they are, before the merged ones."""
    kept: list[PolicyRule] = []
    merged: dict[tuple[str, str, tuple[str, ...]], PolicyRule] = {}
    for rule in rules:
        simple = (len(rule.api_groups) == 1 and len(rule.resources) == 1 and len(rule.resource_names) <= 1
                  and not rule.non_resource_urls)
        if not simple:
            kept.append(rule)
            continue
        key = (rule.api_groups[0], rule.resources[0], rule.resource_names)
        seen = merged.get(key)
        merged[key] = rule if seen is None else PolicyRule(
            seen.verbs + rule.verbs, seen.api_groups, seen.resources, seen.resource_names)
    return kept + list(merged.values())


def _go_strings(values: Sequence[str]) -> str:
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def compact_string(rule: PolicyRule) -> str:
    """kube's CompactString: `{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`."""
    parts = [f"{label}:{_go_strings(values)}" for label, values in (
        ("APIGroups", rule.api_groups), ("Resources", rule.resources), ("NonResourceURLs", rule.non_resource_urls),
        ("ResourceNames", rule.resource_names), ("Verbs", rule.verbs)) if values]
    return "{" + ", ".join(parts) + "}"
