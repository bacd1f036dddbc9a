"""The FlowSchemas' Dangling condition, kept current as kube-apiserver's APF configuration controller keeps it
(k8s.io/apiserver/pkg/util/flowcontrol/apf_controller.go): a FlowSchema whose priority level exists has Dangling
False (reason Found), one whose level does not has Dangling True (reason NotFound), each with kube's message;
the MISSINGPL column of `kubectl get flowschemas` shows it. A FlowSchema is looked at again whenever it changes
and whenever a priority level is created or deleted.

A singleton (kube-apiserver's own part, always run): the elected core writes the condition, under kube's field
manager; the informers it follows are the ones every core's classifier (server/auth/apf.py) shares.
"""

from __future__ import annotations

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.workload.keyed import Key, KeyedController, Obj
from server.machinery import errors, meta
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers

GROUP, VERSION = "flowcontrol.apiserver.k8s.io", "v1beta3"
FLOW_SCHEMAS = core_pb2.ResourcePath(group=GROUP, version=VERSION, resource="flowschemas")
PRIORITY_LEVELS = core_pb2.ResourcePath(group=GROUP, version=VERSION, resource="prioritylevelconfigurations")
MANAGER = "api-priority-and-fairness-config-consumer-v1"


def dangling_condition(level: str, exists: bool) -> Obj:
    """The Dangling condition kube's APF controller writes (without its lastTransitionTime)."""
    quoted = orjson.dumps(level).decode()
    if exists:
        return {"type": "Dangling", "status": "False", "reason": "Found",
                "message": f"This FlowSchema references the PriorityLevelConfiguration object named {quoted} "
                           "and it exists"}
    return {"type": "Dangling", "status": "True", "reason": "NotFound",
            "message": f"This FlowSchema references the PriorityLevelConfiguration object named {quoted} "
                       "but there is no such object"}


class FlowSchemaStatusController(KeyedController):
    name = "apf-configuration-controller"

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        super().__init__(core, informers)
        self.schemas = self.follow(FLOW_SCHEMAS, self._schema_changed)
        self.levels = self.follow(PRIORITY_LEVELS, self._level_changed)

    def started(self) -> None:
        for key in self.schemas:
            self.queue(key)

    def _schema_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None:
            self.queue(("", meta.meta(new).get("name", "")))

    def _level_changed(self, old: Obj | None, new: Obj | None) -> None:
        if (old is None) == (new is None):  # an update leaves the level there: nothing dangles anew
            return
        name = meta.meta(new if new is not None else old or {}).get("name", "")
        for key, schema in self.schemas.items():
            if _level_of(schema) == name:
                self.queue(key)

    async def sync(self, key: Key) -> None:
        schema = self.schemas.get(key)
        if schema is None:
            return
        level = _level_of(schema)
        wanted = dangling_condition(level, ("", level) in self.levels)
        conditions = [c for c in ((schema.get("status") or {}).get("conditions") or []) if isinstance(c, dict)]
        current = next((c for c in conditions if c.get("type") == "Dangling"), None)
        if current is not None and all(current.get(k) == v for k, v in wanted.items()):
            return
        wanted["lastTransitionTime"] = meta.now()
        updated = {**schema, "status": {**(schema.get("status") or {}),
                                        "conditions": [*(c for c in conditions if c.get("type") != "Dangling"),
                                                       wanted]}}
        path = core_pb2.ResourcePath()
        path.CopyFrom(FLOW_SCHEMAS)
        path.name, path.subresource = key[1], "status"
        request = core_pb2.UpdateRequest(path=path, object=core_pb2.RawObject(
            encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(updated)))
        request.options.fieldManager = MANAGER
        try:
            await self.core.update(request)
        except errors.ApiError as err:
            if err.code != 404:  # 409: changed meanwhile, the informer brings it back; 404: gone
                raise


def _level_of(schema: Obj) -> str:
    return str(((schema.get("spec") or {}).get("priorityLevelConfiguration") or {}).get("name", ""))


def singletons(core: Core, informers: SharedInformers) -> list[Singleton]:
    controller = FlowSchemaStatusController(core, informers)
    return [Singleton("APFConfigurationController", controller.start, controller.stop)]
