"""apps/v1, batch/v1, coordination.k8s.io/v1, events.k8s.io/v1 and rbac.authorization.k8s.io/v1 kinds: one
module per group (apps, batch, coordination, events, rbac), gathered here in kube-apiserver's group priority
order, which /apis lists them in."""

from __future__ import annotations

from server.kinds import apps, batch, coordination, events, rbac
from server.registry.resources import Resource

KINDS: tuple[Resource, ...] = (*apps.KINDS, *events.KINDS, *batch.KINDS, *rbac.KINDS, *coordination.KINDS)
