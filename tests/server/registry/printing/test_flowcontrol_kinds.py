"""FlowSchemas print in the order kube's list printer sorts them (FlowSchemaSequence: matchingPrecedence, then
name), whatever the list's order; other kinds keep the list's."""

from __future__ import annotations

import pytest

from server.kinds import CONFIG_MAPS
from server.kinds.flowcontrol import FLOW_SCHEMAS
from server.machinery.values import Obj
from server.registry import printing
from server.registry.resources import Resource


def flow_schema(name: str, precedence: int) -> Obj:
    return {"metadata": {"name": name}, "spec": {"matchingPrecedence": precedence,
                                                 "priorityLevelConfiguration": {"name": "global-default"}}}


@pytest.mark.parametrize(("resource", "listed", "printed"), [
    (FLOW_SCHEMAS, [flow_schema("catch-all", 10000), flow_schema("exempt", 1), flow_schema("kube-scheduler", 800),
                    flow_schema("kube-controller-manager", 800), flow_schema("probes", 2)],
     ["exempt", "probes", "kube-controller-manager", "kube-scheduler", "catch-all"]),
    (CONFIG_MAPS, [{"metadata": {"name": "b"}}, {"metadata": {"name": "a"}}], ["b", "a"]),
])
def test_list_rows_in_the_printers_order(resource: Resource, listed: list[Obj], printed: list[str]) -> None:
    table = printing.table(resource, [(obj, "7") for obj in listed], list_meta={"resourceVersion": "7"})
    assert [row["cells"][0] for row in table["rows"]] == printed
