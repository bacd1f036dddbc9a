"""What admission adds to a Pod, per plugin, and a Pod replaced from the manifest it was created from: kube runs an
update's mutating plugins before validating it, so Priority keeps the stored priority and DefaultTolerationSeconds
adds its tolerations again, and the replace is accepted (kube's test-cmd replaces Pods so, with ServiceAccount and
DefaultTolerationSeconds disabled)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.server.client import Client, Obj, path, refused

NS = "default"
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


def manifest(**spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"name": "p"}},
            "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.9"}], **spec}}


# (plugins disabled, what a new Pod's spec then holds: its account, priority, preemption policy, tolerations)
ADDED: list[tuple[tuple[str, ...], tuple[str | None, int | None, str | None, list[Obj] | None]]] = [
    ((), ("default", 0, "PreemptLowerPriority", DEFAULT_TOLERATIONS)),
    (("ServiceAccount",), (None, 0, "PreemptLowerPriority", DEFAULT_TOLERATIONS)),
    (("DefaultTolerationSeconds",), ("default", 0, "PreemptLowerPriority", None)),
    (("Priority",), ("default", None, None, DEFAULT_TOLERATIONS)),
    (("ServiceAccount", "DefaultTolerationSeconds"), (None, 0, "PreemptLowerPriority", None)),  # test-cmd's
]


@pytest.mark.parametrize(("disabled", "expected"), ADDED, ids=[",".join(a[0]) or "defaults" for a in ADDED])
async def test_each_plugin_adds_its_part_and_a_replace_keeps_it(
        with_plugins: Callable[..., Any], disabled: tuple[str, ...],
        expected: tuple[str | None, int | None, str | None, list[Obj] | None]) -> None:
    client: Client = await with_plugins(disable=disabled)
    created = await client.create(path("pods", NS), manifest())
    spec = created["spec"]
    got = (spec.get("serviceAccountName"), spec.get("priority"), spec.get("preemptionPolicy"), spec.get("tolerations"))
    assert got == expected
    assert spec.get("serviceAccount") == spec.get("serviceAccountName")
    # `kubectl replace -f` of the manifest: no resourceVersion, none of what admission added
    relabeled = manifest()
    relabeled["metadata"]["labels"] = {"name": "p", "replaced": "yes"}
    if "ServiceAccount" not in disabled:  # the ServiceAccount plugin names an account on create only, as kube's
        relabeled["spec"]["serviceAccountName"] = "default"
    replaced, _ = await client.update(path("pods", NS, "p"), relabeled)
    again = replaced["spec"]
    assert replaced["metadata"]["labels"]["replaced"] == "yes"
    assert (again.get("serviceAccountName"), again.get("priority"), again.get("preemptionPolicy"),
            again.get("tolerations")) == expected


def _drop_account(spec: Obj) -> None:
    spec.pop("serviceAccountName", None)
    spec.pop("serviceAccount", None)


def _drop_tolerations(spec: Obj) -> None:
    spec.pop("tolerations", None)


def _other_priority(spec: Obj) -> None:
    spec["priority"] = 5


# What an update may not take away or change when the plugin that could restore it does not run for it.
REFUSED: list[tuple[str, tuple[str, ...], Callable[[Obj], None], str]] = [
    ("account left out", (), _drop_account, "spec.serviceAccount"),  # ServiceAccount mutates creates alone
    ("tolerations left out, plugin off", ("DefaultTolerationSeconds",), _drop_tolerations, "spec.tolerations"),
    ("another priority", (), _other_priority, "spec.priority"),
]


@pytest.mark.parametrize(("disabled", "change", "named"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
async def test_what_no_plugin_restores_is_a_forbidden_change(with_plugins: Callable[..., Any],
                                                             disabled: tuple[str, ...], change: Callable[[Obj], None],
                                                             named: str) -> None:
    client: Client = await with_plugins(disable=disabled)
    created = await client.create(path("pods", NS), manifest(tolerations=[
        {"key": "k", "operator": "Exists", "effect": "NoSchedule"}]))
    change(created["spec"])
    failed = await refused(client.update(path("pods", NS, "p"), created))
    (cause,) = failed.status["details"]["causes"]
    assert (failed.status["code"], cause["field"], cause["reason"]) == (422, "spec", "FieldValueForbidden")
    assert f"\n  {named}\n" in cause["message"] + "\n"
