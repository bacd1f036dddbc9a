"""The chain's plugin selection: a plugin runs for the operations it handles and, where it names them, only for
the resources it judges, so a write of another kind pays nothing for it; an idle plugin runs for none."""

from __future__ import annotations

import pytest

from server.admission import Chain, Plugin, Step
from server.kinds import BUILTIN
from server.objects.admitting import Attributes, Operation
from server.objects.context import Context
from server.objects.core import Core

RESOURCES = {(r.group, r.resource): r for r in BUILTIN}


def attributes(group: str, resource: str, operation: Operation) -> Attributes:
    return Attributes(resource=RESOURCES[(group, resource)], operation=operation, name="x", namespace="default",
                      obj={"metadata": {"name": "x"}}, old=None, dry_run=False)


def chain(calls: list[str], idle: list[bool] | None = None) -> Chain:
    def step(name: str) -> Step:
        async def run(ctx: Context, attrs: Attributes) -> None:
            calls.append(name)
        return run

    return Chain([
        Plugin("Everything", frozenset(("CREATE", "UPDATE")), step("everything:admit"),
               step("everything:validate")),
        Plugin("PodsOnly", frozenset(("CREATE",)), validate=step("pods"),
               resources=frozenset({("", "pods")})),
        Plugin("Claims", frozenset(("CREATE", "UPDATE")), step("claims"),
               resources=frozenset({("", "persistentvolumeclaims"), ("apps", "deployments")}),
               idle=lambda: bool(idle and idle[0])),
    ])


@pytest.mark.parametrize(("group", "resource", "operation", "called"), [
    ("", "configmaps", "CREATE", ["everything:admit", "everything:validate"]),
    ("", "pods", "CREATE", ["everything:admit", "everything:validate", "pods"]),
    ("", "pods", "UPDATE", ["everything:admit", "everything:validate"]),  # PodsOnly handles no UPDATE
    ("", "persistentvolumeclaims", "UPDATE", ["everything:admit", "claims", "everything:validate"]),
    ("apps", "deployments", "CREATE", ["everything:admit", "claims", "everything:validate"]),
    ("", "configmaps", "DELETE", []),
])
async def test_a_plugin_runs_only_for_what_it_judges(core: Core, group: str, resource: str, operation: Operation,
                                                     called: list[str]) -> None:
    calls: list[str] = []
    await chain(calls).admit(core.context, attributes(group, resource, operation))
    assert calls == called


async def test_an_idle_plugin_runs_for_nothing_and_wakes_without_a_new_chain(core: Core) -> None:
    calls: list[str] = []
    idle = [True]
    plugins = chain(calls, idle)
    await plugins.admit(core.context, attributes("", "persistentvolumeclaims", "UPDATE"))
    assert calls == ["everything:admit", "everything:validate"]
    idle[0] = False  # configured now: the same request shape reaches it
    calls.clear()
    await plugins.admit(core.context, attributes("", "persistentvolumeclaims", "UPDATE"))
    assert calls == ["everything:admit", "claims", "everything:validate"]
