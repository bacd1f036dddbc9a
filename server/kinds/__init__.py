"""The built-in kinds, registered as data, one module per family of kinds.

Adding a kind is a protobuf message (protos/capstan/api/...) and an entry in one of these
modules: its names, scope, subresources, field selectors, defaults and validation; its Table
columns live in server/registry/printing.
"""

from __future__ import annotations

from server.kinds import (
    apiextensions,
    certificates,
    config,
    corev1,
    extensions,
    flowcontrol,
    flowcontrol_v1beta2,
    platform,
    reviews,
    storage,
    workloads,
)
from server.kinds.config import CONFIG_MAPS, NAMESPACE_FINALIZER, NAMESPACES, SECRETS
from server.registry.resources import Resource

BUILTIN: tuple[Resource, ...] = (*config.KINDS, *corev1.KINDS, *workloads.KINDS, *apiextensions.KINDS, *reviews.KINDS,
                                  *storage.KINDS, *certificates.KINDS, *platform.KINDS, *flowcontrol.KINDS,
                                  *flowcontrol_v1beta2.KINDS, *extensions.KINDS)

__all__ = ["BUILTIN", "CONFIG_MAPS", "NAMESPACES", "NAMESPACE_FINALIZER", "SECRETS"]
