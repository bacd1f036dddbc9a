"""core/v1 kinds beyond config: ServiceAccount, Service, Endpoints, Pod, Node, Event, PersistentVolume,
PersistentVolumeClaim, ResourceQuota, LimitRange and ReplicationController."""

from __future__ import annotations

from server.registry import Resource

KINDS: tuple[Resource, ...] = ()
