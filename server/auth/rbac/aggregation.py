"""The ClusterRole aggregation controller (kube-controller-manager's clusterrole-aggregation): a ClusterRole
with `aggregationRule.clusterRoleSelectors` has as its rules the union of the rules of every other ClusterRole
its selectors match, selector by selector, roles by name, each distinct rule once:

    view (aggregate-to-view) <- system:aggregate-to-view's rules, then any custom role labelled
                                rbac.authorization.k8s.io/aggregate-to-view: "true"

It reads the ClusterRoles the RBAC index holds and runs after any of them changes (several changes together make one
pass: one item of a work queue). Writes are updates as the core itself (system:masters) with the read
resourceVersion; one that loses a race is redone on the change that won it. Elected: it runs in the leading core
only (server/runtime/election.py), over that core's own index; a new leader's first pass aggregates whatever changed
meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.rbac.index import RbacIndex
from server.machinery import errors
from server.machinery.selectors import labels
from server.objects.core import Core
from server.runtime.worker import Worker
from server.runtime.workqueue import ExponentialBackoff, WorkQueue

log = logging.getLogger(__name__)

GROUP = "rbac.authorization.k8s.io"
FIELD_MANAGER = "clusterrole-aggregation-controller"
PASS = "pass"  # the one work item
Obj = dict[str, Any]


def aggregated_rules(role: Obj, roles: dict[str, Obj]) -> list[Obj]:
    """The rules `role`'s aggregationRule gathers from `roles` (by name)."""
    name = (role.get("metadata") or {}).get("name")
    gathered: list[Obj] = []
    for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []:
        try:
            chosen = labels.from_label_selector(selector)
        except labels.SelectorError:
            continue
        for other_name in sorted(roles):
            other = roles[other_name]
            if other_name == name or not chosen.matches((other.get("metadata") or {}).get("labels") or {}):
                continue
            gathered += [rule for rule in other.get("rules") or [] if rule not in gathered]
    return gathered


class AggregationController:
    """One work item, the whole pass: a change queued while a pass runs makes one more pass after it."""

    def __init__(self, core: Core, index: RbacIndex) -> None:
        self._core = core
        self._index = index
        self._worker = self._new_worker()

    def _new_worker(self) -> Worker[str]:
        return Worker(WorkQueue(ExponentialBackoff()), self._sync, name="capstan-clusterrole-aggregation",
                      retry=self._failed)

    def start(self) -> None:
        if self._worker.queue.shutting_down():
            self._worker = self._new_worker()
        self._worker.start()
        self._index.cluster_role_listeners.append(self._changed)
        self._changed()

    async def stop(self) -> None:
        if self._changed in self._index.cluster_role_listeners:
            self._index.cluster_role_listeners.remove(self._changed)
        await self._worker.stop()

    async def settled(self) -> None:
        """Wait for the pass in progress (and any it asked for) to finish."""
        while not self._worker.queue.idle():
            await asyncio.sleep(0.005)

    def _changed(self) -> None:
        self._worker.queue.add(PASS)

    def _failed(self, item: str, err: Exception) -> bool:
        log.exception("ClusterRole aggregation failed", exc_info=err)
        return True

    async def _sync(self, item: str) -> None:
        await asyncio.sleep(0)  # let a burst of changes land in the index first
        roles = dict(self._index.cluster_roles)
        for role in roles.values():
            if role.get("aggregationRule") is None:
                continue
            rules = aggregated_rules(role, roles)
            if rules != (role.get("rules") or []):
                await self._write(role, rules)

    async def _write(self, role: Obj, rules: list[Obj]) -> None:
        updated = {**role, "rules": rules}
        path = core_pb2.ResourcePath(group=GROUP, version="v1", resource="clusterroles",
                                     name=role["metadata"]["name"])
        request = core_pb2.UpdateRequest(
            path=path, object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(updated)))
        request.options.fieldManager = FIELD_MANAGER
        try:
            await self._core.update(request)
        except errors.ApiError as err:
            if err.code not in (404, 409):
                log.warning("ClusterRole aggregation of %s failed: %s", path.name, err.status.message)
