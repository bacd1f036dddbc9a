"""The one authorization method (kube's authorizer.Authorizer), and the modes that need no state.

`authorize` answers (decision, reason): ALLOW lets the request through; DENY and NO_OPINION refuse it (a union
of authorizers would ask the next on NO_OPINION). The reason is what kube appends to a Forbidden message and
what a SubjectAccessReview reports. RBAC (server/auth/rbac/) is the default implementation; reviews call the
same method, so what `kubectl auth can-i` says is what the request path does.

An authorizer that asks over the network (the webhook, server/auth/webhook.py) also has `async decide`; the
request path, impersonation and the access reviews call `decide(authorizer, attributes)`, which awaits it
where there is one, so no decision blocks the event loop. Checks made synchronously while a verb runs call
`authorize`, which such an authorizer answers from what it has already been told.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from server.auth.attributes import Attributes, Decision
from server.machinery.user import MASTERS, UserInfo


@dataclass(frozen=True, slots=True)
class ResourceRule:
    """One rule of a SelfSubjectRulesReview's answer (authorization.k8s.io/v1 ResourceRule)."""

    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NonResourceRule:
    verbs: tuple[str, ...]
    non_resource_urls: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Rules:
    """What a user may do in a namespace (kube's RuleResolver.RulesFor): `incomplete` when the authorizer
    cannot list everything it would allow, `evaluation_error` says why."""

    resource_rules: tuple[ResourceRule, ...] = ()
    non_resource_rules: tuple[NonResourceRule, ...] = ()
    incomplete: bool = False
    evaluation_error: str = ""
    extra: dict[str, str] = field(default_factory=dict)


class Authorizer(Protocol):
    def authorize(self, attributes: Attributes) -> tuple[Decision, str]: ...

    def rules_for(self, user: UserInfo, namespace: str) -> Rules: ...


def synchronous(authorizer: Authorizer) -> bool:
    """Whether `authorize` alone gives the authorizer's decisions: it has no asynchronous `decide`, or one that
    only calls `authorize` (a union of synchronous authorizers)."""
    if getattr(authorizer, "decide", None) is None:
        return True
    return getattr(authorizer, "asynchronous", True) is False


async def decide(authorizer: Authorizer, attributes: Attributes) -> tuple[Decision, str]:
    """The authorizer's decision, awaited when it has an asynchronous one."""
    deciding: Callable[[Attributes], Awaitable[tuple[Decision, str]]] | None = getattr(authorizer, "decide", None)
    if deciding is not None:
        return await deciding(attributes)
    return authorizer.authorize(attributes)


class PrivilegedGroups:
    """kube-apiserver's first authorizer whatever --authorization-mode says (authorizerfactory.NewPrivilegedGroups
    of system:masters): a member is allowed everything, with no reason, before any mode is asked. It resolves no
    rules: a rules review of a member lists what the modes grant."""

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        if MASTERS in attributes.user.groups:
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules()


class AlwaysAllow:
    """--authorization-mode=AlwaysAllow (and --insecure): everything is allowed."""

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        return Decision.ALLOW, ""

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules((ResourceRule(("*",), ("*",), ("*",)),), (NonResourceRule(("*",), ("*",)),))


class AlwaysDeny:
    """--authorization-mode=AlwaysDeny: nothing is allowed (kube's reason text)."""

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        return Decision.NO_OPINION, "Everything is forbidden."

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules()


class Union:
    """--authorization-mode with several modes: each is asked in order; the first ALLOW or DENY decides, and
    NO_OPINION asks the next (kube's union authorizer). The reasons of those without an opinion are joined."""

    def __init__(self, authorizers: tuple[Authorizer, ...]) -> None:
        self._authorizers = authorizers
        self.asynchronous = any(getattr(a, "decide", None) is not None for a in authorizers)

    async def decide(self, attributes: Attributes) -> tuple[Decision, str]:
        """authorize, awaiting the members that decide asynchronously."""
        if not self.asynchronous:
            return self.authorize(attributes)
        reasons: list[str] = []
        for authorizer in self._authorizers:
            decision, reason = await decide(authorizer, attributes)
            if decision is not Decision.NO_OPINION:
                return decision, reason
            if reason:
                reasons.append(reason)
        return Decision.NO_OPINION, "\n".join(reasons)

    def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        if len(self._authorizers) == 1:
            return self._authorizers[0].authorize(attributes)
        reasons: list[str] = []
        for authorizer in self._authorizers:
            decision, reason = authorizer.authorize(attributes)
            if decision is not Decision.NO_OPINION:
                return decision, reason
            if reason:
                reasons.append(reason)
        return Decision.NO_OPINION, "\n".join(reasons)

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        resource: list[ResourceRule] = []
        non_resource: list[NonResourceRule] = []
        incomplete, errors = False, []
        for authorizer in self._authorizers:
            rules = authorizer.rules_for(user, namespace)
            resource += rules.resource_rules
            non_resource += rules.non_resource_rules
            incomplete = incomplete or rules.incomplete
            if rules.evaluation_error:
                errors.append(rules.evaluation_error)
        return Rules(tuple(resource), tuple(non_resource), incomplete, "; ".join(errors))
