"""Which columns a kind's Table has: its own (a CRD's printer columns), else its built-in printer's, else
the default table convertor's; and the order a list printer puts rows in, where it is not the list's."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from server.machinery.values import Obj
from server.registry.printing import (
    certificate_kinds,
    columns,
    corev1_kinds,
    extension_kinds,
    flowcontrol_kinds,
    platform_kinds,
    storage_kinds,
    workloads,
)
from server.registry.resources import Resource
from server.registry.strategy import Column

# Built-in printers by (group, resource): kube registers them by Go type, for every version.
BUILTIN: Mapping[tuple[str, str], tuple[Column, ...]] = {
    **columns.CONFIG, **corev1_kinds.COLUMNS, **workloads.COLUMNS, **storage_kinds.COLUMNS,
    **certificate_kinds.COLUMNS, **platform_kinds.COLUMNS, **flowcontrol_kinds.COLUMNS,
    **extension_kinds.COLUMNS,
    # events.k8s.io Events are stored and printed in core form: kube prints both APIs' Events with one printer.
    ("events.k8s.io", "events"): corev1_kinds.EVENT_COLUMNS,
}


def columns_for(resource: Resource) -> tuple[Column, ...]:
    return resource.strategy.columns or BUILTIN.get((resource.group, resource.resource), columns.DEFAULT_COLUMNS)


# List printers that sort their rows (kube's printFlowSchemaList sorts by FlowSchemaSequence): the sort key.
ROW_ORDER: Mapping[tuple[str, str], Callable[[Obj], tuple[object, ...]]] = {
    **flowcontrol_kinds.ROW_ORDER,
}


def row_order(resource: Resource) -> Callable[[Obj], tuple[object, ...]] | None:
    """The sort key of the kind's list printer, if it sorts (a CRD's printer columns never do)."""
    return None if resource.strategy.columns else ROW_ORDER.get((resource.group, resource.resource))


def ordered(resource: Resource, rows: list[tuple[Obj, str]]) -> list[tuple[Obj, str]]:
    """A list's (object, resourceVersion) rows in the order its printer puts them."""
    key = row_order(resource)
    return rows if key is None else sorted(rows, key=lambda row: key(row[0]))
