"""apps/v1, batch/v1, coordination.k8s.io/v1, events.k8s.io/v1 and rbac.authorization.k8s.io/v1 kinds."""

from __future__ import annotations

from server.registry import Resource

KINDS: tuple[Resource, ...] = ()
