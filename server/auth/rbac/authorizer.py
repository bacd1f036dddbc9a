"""RbacAuthorizer: kube's RBACAuthorizer over the in-memory index (never a read of the store per request).

authorize visits the bindings that name the user (ClusterRoleBindings, then the request namespace's
RoleBindings) and allows on the first rule that matches, saying which binding did:

    RBAC: allowed by ClusterRoleBinding "admins" of ClusterRole "cluster-admin" to Group "system:masters"

Otherwise NO_OPINION, with the roles that bindings of the user reference but that do not exist as the
reason (kube's aggregate: one message alone, several as `[a, b]`), or no reason at all. rules_for is kube's
RulesFor, which SelfSubjectRulesReview and escalation checks read.

Decisions are cached by their attributes (user, groups, verb, resource, namespace, name, ...) for as long as the
index does not change: any change of a role or binding bumps the index's generation and empties the cache before
the next decision, so a cached answer is always the one the index gives now. A decision about a named object
that no rule with resourceNames took part in (none was reached before the rule that allowed, or none at all when
nothing allowed) is the same for every name, answer and reason alike, so it is also kept without the name: a
client reading or writing many objects of one kind (a controller, a list of names) is decided once, not once a
name. Each cache holds at most DECISIONS answers, the oldest out.
"""

from __future__ import annotations

from typing import TypeVar

from server.auth.attributes import Attributes, Decision
from server.auth.authorizer import NonResourceRule, ResourceRule, Rules
from server.auth.rbac.index import RbacIndex
from server.auth.rbac.rules import PolicyRule
from server.machinery.user import UserInfo


def aggregate(messages: list[str]) -> str:
    """utilerrors.NewAggregate(errs).Error(): duplicates dropped, one message as is, several bracketed."""
    unique = list(dict.fromkeys(messages))
    if len(unique) <= 1:
        return unique[0] if unique else ""
    return "[" + ", ".join(unique) + "]"


DECISIONS = 4096
_Key = TypeVar("_Key")


# What a decision about a named resource reads besides the name: user, verb, group, resource, subresource, namespace.
AnyName = tuple[UserInfo, str, str, str, str, str]


class RbacAuthorizer:
    def __init__(self, index: RbacIndex) -> None:
        self.index = index
        self._decisions: dict[Attributes, tuple[Decision, str]] = {}
        self._any_name: dict[AnyName, tuple[Decision, str]] = {}  # decisions no resourceNames rule took part in
        self._generation = index.generation

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        if self._generation != self.index.generation:
            self._decisions.clear()
            self._any_name.clear()
            self._generation = self.index.generation
        decided = self._decisions.get(attributes)
        if decided is not None:
            return decided
        any_name: AnyName | None = None
        if attributes.name and attributes.resource_request:
            any_name = (attributes.user, attributes.verb, attributes.api_group, attributes.resource,
                        attributes.subresource, attributes.namespace)
            decided = self._any_name.get(any_name)
            if decided is not None:
                return decided
        decided, by_name = self._decide(attributes)
        _remember(self._decisions, attributes, decided)
        if any_name is not None and not by_name:
            _remember(self._any_name, any_name, decided)
        return decided

    def _decide(self, attributes: Attributes) -> tuple[tuple[Decision, str], bool]:
        """The decision, and whether a rule with resourceNames took part in it (so that another name could be
        decided otherwise)."""
        user = attributes.user
        index = self.index
        rules_by_role = index.rules
        missing: list[str] | None = None
        by_name = False
        for bucket in index.applicable(user.name, user.groups, attributes.namespace):
            for binding in bucket.values():
                rules = rules_by_role.get(binding.role_key)
                if rules is None:
                    missing = missing or []
                    missing.append(binding.missing_role())
                    continue
                for rule in rules:
                    if rule.resource_names:
                        by_name = True
                    if rule.allows(attributes):
                        return (Decision.ALLOW, f"RBAC: allowed by {binding.describe(user.name, user.groups)}"), by_name
        if missing:
            return (Decision.NO_OPINION, f"RBAC: {aggregate(missing)}"), by_name
        return (Decision.NO_OPINION, ""), by_name

    def policy_rules_for(self, user: UserInfo, namespace: str) -> tuple[list[PolicyRule], str]:
        """kube's DefaultRuleResolver.RulesFor: every rule of every binding that applies, and the aggregate of
        the roles found missing ("" when none)."""
        rules: list[PolicyRule] = []
        missing: list[str] = []
        seen: set[tuple[str, str, str]] = set()
        for bucket in self.index.applicable(user.name, user.groups, namespace):
            for key, binding in bucket.items():
                if key in seen:
                    continue
                seen.add(key)
                found = self.index.rules.get(binding.role_key)
                if found is None:
                    missing.append(binding.missing_role())
                else:
                    rules.extend(found)
        return rules, aggregate(missing)

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        """kube's RBACAuthorizer.RulesFor: a rule with resources is a resource rule, one with URLs a
        non-resource rule; never incomplete, the missing roles as the evaluation error."""
        rules, error = self.policy_rules_for(user, namespace)
        resource_rules = tuple(ResourceRule(r.verbs, r.api_groups, r.resources, r.resource_names)
                               for r in rules if r.resources)
        non_resource_rules = tuple(NonResourceRule(r.verbs, r.non_resource_urls) for r in rules if r.non_resource_urls)
        return Rules(resource_rules, non_resource_rules, evaluation_error=error)


def _remember(cache: dict[_Key, tuple[Decision, str]], key: _Key, decided: tuple[Decision, str]) -> None:
    if len(cache) >= DECISIONS:
        del cache[next(iter(cache))]
    cache[key] = decided
