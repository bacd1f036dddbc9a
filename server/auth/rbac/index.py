"""The four RBAC kinds held in memory, in the shapes a decision reads (kube's informer caches and listers).

Roles and ClusterRoles are kept as their compiled rules, by (namespace, name) — "" for a ClusterRole, which no
Role can collide with since every Role has a namespace. Bindings are kept by subject, so a decision reads only
the bindings that name the user, one of their groups, or (a ServiceAccount subject) the user's
`system:serviceaccount:<ns>:<name>` name:

    ClusterRoleBinding "b" to Group "dev"     -> cluster_by_group["dev"]
    RoleBinding "rb" in "team" to SA "bot"    -> namespace_by_user[("team", "system:serviceaccount:team:bot")]

A ServiceAccount subject without a namespace takes a RoleBinding's own, and in a ClusterRoleBinding applies
to nobody (kube's appliesToUser). Buckets keep insertion order, so the first binding that allows a request is
the same from one decision to the next.

Mutated only by the informers' handlers (server/auth/rbac/cache.py, one event loop); decisions read it in
between, never during a change. Every change bumps `generation`, so what was decided from an earlier state
(the authorizer's decision cache) can tell it is stale.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from server.auth.rbac.rules import PolicyRule, rules_of
from server.machinery.user import service_account_username
from server.machinery.validation.names import go_quote
from server.machinery.values import text_of as _text

Obj = dict[str, Any]
RoleKey = tuple[str, str]  # (namespace, name); namespace "" for a ClusterRole
BindingKey = tuple[str, str, str]  # (kind, namespace, name)

USER, GROUP, SERVICE_ACCOUNT = "User", "Group", "ServiceAccount"
CLUSTER_ROLE_BINDING, ROLE_BINDING = "ClusterRoleBinding", "RoleBinding"


@dataclass(frozen=True, slots=True)
class Subject:
    kind: str
    name: str
    namespace: str = ""

    def applies_to(self, user: str, groups: tuple[str, ...], binding_namespace: str) -> bool:
        """kube's appliesToUser."""
        if self.kind == USER:
            return self.name == user
        if self.kind == GROUP:
            return self.name in groups
        if self.kind == SERVICE_ACCOUNT:
            namespace = self.namespace or binding_namespace
            return bool(namespace) and user == service_account_username(namespace, self.name)
        return False

    def describe(self, binding_namespace: str) -> str:
        """kube's describeSubject: `User "bob"`, `ServiceAccount "bot/team"`."""
        if self.kind == SERVICE_ACCOUNT:
            return f"{self.kind} {go_quote(self.name + '/' + (self.namespace or binding_namespace))}"
        return f"{self.kind} {go_quote(self.name)}"


@dataclass(frozen=True, slots=True)
class Binding:
    kind: str  # ClusterRoleBinding or RoleBinding
    namespace: str
    name: str
    role_kind: str
    role_name: str
    subjects: tuple[Subject, ...]
    # `RoleBinding "b/ns" of Role "r"` and each subject's `ServiceAccount "bot/ns"` (kube's describers).
    described: tuple[str, tuple[str, ...]] = ("", ())

    @property
    def key(self) -> BindingKey:
        return self.kind, self.namespace, self.name

    @property
    def role_key(self) -> RoleKey:
        return (self.namespace if self.role_kind == "Role" else ""), self.role_name

    def missing_role(self) -> str:
        """What kube's role lister answers for a role that is not there."""
        singular = "role" if self.role_kind == "Role" else "clusterrole"
        return f"{singular}.rbac.authorization.k8s.io {go_quote(self.role_name)} not found"

    def describe(self, user: str, groups: tuple[str, ...]) -> str:
        """kube's binding describers, naming the first subject that applies to the user (the quoted parts are
        built once, in `described`)."""
        prefix, subjects = self.described
        for subject, described in zip(self.subjects, subjects, strict=True):
            if subject.applies_to(user, groups, self.namespace):
                return f"{prefix} to {described}"
        return f"{prefix} to "

    def subject_keys(self) -> list[tuple[bool, str]]:
        """(is_group, name) of every subject: users and service accounts by user name, groups by group name."""
        keys: list[tuple[bool, str]] = []
        for s in self.subjects:
            if s.kind == USER:
                keys.append((False, s.name))
            elif s.kind == GROUP:
                keys.append((True, s.name))
            elif s.kind == SERVICE_ACCOUNT and (s.namespace or self.namespace):
                keys.append((False, service_account_username(s.namespace or self.namespace, s.name)))
        return list(dict.fromkeys(keys))


def binding_of(kind: str, obj: Obj) -> Binding:
    metadata = obj.get("metadata") or {}
    ref = obj.get("roleRef") or {}
    subjects = tuple(Subject(_text(s.get("kind")), _text(s.get("name")), _text(s.get("namespace")))
                     for s in obj.get("subjects") or [] if isinstance(s, dict))
    namespace, name, role_kind, role_name = (_text(metadata.get("namespace")), _text(metadata.get("name")),
                                             _text(ref.get("kind")), _text(ref.get("name")))
    shown = go_quote(f"{name}/{namespace}" if kind == ROLE_BINDING else name)
    prefix = f"{kind} {shown} of {role_kind} {go_quote(role_name)}"
    return Binding(kind, namespace, name, role_kind, role_name, subjects,
                   (prefix, tuple(s.describe(namespace) for s in subjects)))


def _name(obj: Obj) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return _text(metadata.get("namespace")), _text(metadata.get("name"))


class RbacIndex:
    def __init__(self) -> None:
        self.rules: dict[RoleKey, tuple[PolicyRule, ...]] = {}
        self.cluster_roles: dict[str, Obj] = {}  # as stored: the aggregation controller reads labels and rules
        self.bindings: dict[BindingKey, Binding] = {}
        self.cluster_by_user: dict[str, dict[BindingKey, Binding]] = {}
        self.cluster_by_group: dict[str, dict[BindingKey, Binding]] = {}
        self.namespace_by_user: dict[tuple[str, str], dict[BindingKey, Binding]] = {}
        self.namespace_by_group: dict[tuple[str, str], dict[BindingKey, Binding]] = {}
        self.generation = 0  # bumped by every change of a role or binding
        # Called after any ClusterRole changes (the aggregation controller).
        self.cluster_role_listeners: list[Callable[[], None]] = []

    # Roles

    def put_role(self, obj: Obj) -> None:
        self.generation += 1
        self.rules[_name(obj)] = rules_of(obj)

    def remove_role(self, obj: Obj) -> None:
        self.generation += 1
        self.rules.pop(_name(obj), None)

    def put_cluster_role(self, obj: Obj) -> None:
        self.generation += 1
        name = _name(obj)[1]
        self.rules[("", name)] = rules_of(obj)
        self.cluster_roles[name] = obj
        self._cluster_roles_changed()

    def remove_cluster_role(self, obj: Obj) -> None:
        self.generation += 1
        name = _name(obj)[1]
        self.rules.pop(("", name), None)
        self.cluster_roles.pop(name, None)
        self._cluster_roles_changed()

    def _cluster_roles_changed(self) -> None:
        for listener in self.cluster_role_listeners:
            listener()

    # Bindings

    def put_binding(self, kind: str, obj: Obj) -> None:
        self.generation += 1
        binding = binding_of(kind, obj)
        self._unindex(binding.key)
        self.bindings[binding.key] = binding
        for is_group, subject in binding.subject_keys():
            self._bucket(binding, is_group, subject)[binding.key] = binding

    def remove_binding(self, kind: str, obj: Obj) -> None:
        self.generation += 1
        namespace, name = _name(obj)
        self._unindex((kind, namespace, name))

    def _locate(self, binding: Binding, is_group: bool, subject: str) -> tuple[dict[Any, dict[BindingKey, Binding]],
                                                                              Any]:
        """The table and key of the bucket a binding's subject is kept in."""
        if binding.kind == CLUSTER_ROLE_BINDING:
            return (self.cluster_by_group if is_group else self.cluster_by_user), subject
        return (self.namespace_by_group if is_group else self.namespace_by_user), (binding.namespace, subject)

    def _bucket(self, binding: Binding, is_group: bool, subject: str) -> dict[BindingKey, Binding]:
        table, key = self._locate(binding, is_group, subject)
        return table.setdefault(key, {})

    def _unindex(self, key: BindingKey) -> None:
        old = self.bindings.pop(key, None)
        if old is None:
            return
        for is_group, subject in old.subject_keys():
            table, bucket_key = self._locate(old, is_group, subject)
            bucket = table.get(bucket_key)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del table[bucket_key]

    def applicable(self, user: str, groups: tuple[str, ...], namespace: str) -> list[dict[BindingKey, Binding]]:
        """The buckets of bindings that apply to the user in the namespace: ClusterRoleBindings first, then the
        namespace's RoleBindings (kube's VisitRulesFor order). A binding naming the user twice (as a user and
        by a group) is in two buckets; what reads them tolerates seeing it twice."""
        found = []
        bucket = self.cluster_by_user.get(user)
        if bucket:
            found.append(bucket)
        by_group = self.cluster_by_group
        for group in groups:
            bucket = by_group.get(group)
            if bucket:
                found.append(bucket)
        if namespace:
            bucket = self.namespace_by_user.get((namespace, user))
            if bucket:
                found.append(bucket)
            by_ns_group = self.namespace_by_group
            for group in groups:
                bucket = by_ns_group.get((namespace, group))
                if bucket:
                    found.append(bucket)
        return found
