"""The strategies' answers without a server: kube's defaults (server/registry/strategy.py) and the built-in kinds' own
rules
that differ from them (Namespace, Pod, Node), as the generic verbs ask them."""

from __future__ import annotations

from typing import Any

import pytest

from server.kinds import BUILTIN, NAMESPACES
from server.kinds.corev1 import NODES
from server.kinds.pods import PODS
from server.registry.strategy import Declared, Strategy

DEFAULT = Strategy()


@pytest.mark.parametrize(("ask", "expected"), [
    (lambda s: s.allow_create_on_update(), False),
    (lambda s: s.holds_deletion({"spec": {"finalizers": ["kubernetes"]}}), False),
    (lambda s: s.redelete_conflict(), ""),
    (lambda s: s.legacy_preconditions(), False),
    (lambda s: s.grace_period({"spec": {"nodeName": "n"}}, 30), None),
    (lambda s: list(s.validate({"metadata": {"name": "a"}})), []),
    (lambda s: s.validate_name("a.b", False), []),
    (lambda s: bool(s.validate_name("A_b", False)), True),
    (lambda s: (s.tracks_generation, s.returns_deleted_object, s.garbage_collection, s.columns),
     (False, False, "DeleteDependents", ())),
], ids=["no-create-on-update", "never-held", "no-redelete-conflict", "kind-worded-preconditions",
        "no-graceful-deletion", "nothing-to-validate", "subdomain-names", "subdomain-names-refused", "flags"])
def test_kube_defaults(ask: Any, expected: object) -> None:
    assert ask(DEFAULT) == expected


@pytest.mark.parametrize(("old", "new", "expected"), [
    (None, {"status": {"phase": "x"}}, {}),
    ({"status": {"phase": "stored"}}, {"status": {"phase": "sent"}}, {"status": {"phase": "stored"}}),
    ({}, {"status": {"phase": "sent"}}, {}),
], ids=["create-drops-status", "update-keeps-stored", "update-without-stored"])
def test_status_reset(old: Any, new: Any, expected: Any) -> None:
    DEFAULT.reset_status(new, old)
    assert new == expected


def test_a_node_keeps_the_status_it_registers_with() -> None:
    registering = {"status": {"capacity": {"cpu": "4"}}}
    NODES.strategy.reset_status(registering, None)
    assert registering == {"status": {"capacity": {"cpu": "4"}}}


@pytest.mark.parametrize(("pod", "requested", "expected"), [
    ({"spec": {"nodeName": "n", "terminationGracePeriodSeconds": 30}}, None, 30),
    ({"spec": {"nodeName": "n", "terminationGracePeriodSeconds": 30}}, 5, 5),
    ({"spec": {"terminationGracePeriodSeconds": 30}}, None, 0),
    ({"spec": {"nodeName": "n"}, "status": {"phase": "Succeeded"}}, 10, 0),
    ({"spec": {"nodeName": "n", "terminationGracePeriodSeconds": -3}}, None, 1),
], ids=["its-own-period", "requested", "unbound", "finished", "negative-is-one"])
def test_a_pods_grace_period(pod: Any, requested: int | None, expected: int) -> None:
    assert PODS.strategy.grace_period(pod, requested) == expected


@pytest.mark.parametrize(("ask", "expected"), [
    (lambda s: s.holds_deletion({"spec": {"finalizers": ["kubernetes"]}}), True),
    (lambda s: s.holds_deletion({"spec": {}}), False),
    (lambda s: s.legacy_preconditions(), True),
    (lambda s: s.redelete_conflict().startswith("The system is ensuring all content is removed"), True),
    (lambda s: s.validate_name("a.b", False) != [], True),
], ids=["spec-finalizers-hold", "nothing-holds", "resource-worded-preconditions", "redelete-conflict",
        "label-names"])
def test_the_namespace_deletion_rules(ask: Any, expected: object) -> None:
    assert ask(NAMESPACES.strategy) == expected


def test_a_namespace_marked_for_deletion_is_terminating() -> None:
    marked: dict[str, Any] = {"status": {"phase": "Active"}}
    NAMESPACES.strategy.mark_deleting(marked)
    assert marked == {"status": {"phase": "Terminating"}}


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
def test_the_system_namespaces_never_go(name: str) -> None:
    with pytest.raises(Exception, match="this namespace may not be deleted"):
        NAMESPACES.strategy.admit_delete(name)


def test_declared_functions_answer_create_and_update() -> None:
    seen: list[tuple[str, bool]] = []

    def prepare(obj: Any, old: Any) -> None:
        seen.append(("prepare", old is None))

    def validation(obj: Any, old: Any) -> list[Any]:
        seen.append(("validate", old is None))
        return []

    declared = Declared(prepare=prepare, validation=validation)
    declared.prepare_for_create({})
    declared.prepare_for_update({}, {})
    declared.validate({})
    declared.validate_update({}, {})
    assert seen == [("prepare", True), ("prepare", False), ("validate", True), ("validate", False)]


def test_every_builtin_kind_has_a_strategy() -> None:
    assert all(isinstance(r.strategy, Strategy) for r in BUILTIN)
