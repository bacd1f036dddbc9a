"""Which columns a kind's Table has: its own (a CRD's printer columns), else its built-in printer's, else
the default table convertor's."""

from __future__ import annotations

from collections.abc import Mapping

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
