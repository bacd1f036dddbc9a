"""CustomResourceDefinitions made real: apiextensions-apiserver's naming, establishing and finalizing controllers.

For every CRD it sees (an informer, server/runtime/informer.py; each change queues the CRD for one worker):

* names: the spec's plural, singular, short names, kind and list kind are accepted unless another CRD of
  the same group already serves one of them; status.acceptedNames and the NamesAccepted condition say so
  ("NoConflicts"/"no conflicts found", or e.g. "PluralConflict"/`"widgets" is already in use`);
* establishing: once the names are accepted, the CRD's served versions are registered in the core's
  registry (server/crd/resource.py), and only then is Established set True ("InitialNamesAccepted"/"the
  initial names have been accepted"), so a client that waits for Established finds the resource served:
  REST, discovery, OpenAPI and the gRPC core all read the registry. A later change to the CRD registers
  its versions again, so a new schema applies to the writes after it. A CRD converting by webhook serves
  its versions through the core's callout client (server/crd/conversion.py): objects stay at the storage
  version and are converted for every other;
* deletion: a deleted CRD is held by the `customresourcecleanup.apiextensions.k8s.io` finalizer
  (server/kinds/apiextensions.py); Terminating becomes "InstanceDeletionInProgress", creates of its kind
  are refused (405), every object of the kind is deleted (objects with finalizers are waited for), then
  Terminating is "InstanceDeletionCompleted" and the finalizer goes, so the core deletes the CRD and its
  resources stop being served.

Status writes go through the CRD's /status subresource with the resourceVersion read as precondition; a
lost race is retried from the next event, which the write that won brings.

Serving is every core's, writing is elected (server/runtime/election.py): every core registers the CRDs
it sees (so a CRD established through one core is served by all), but only the leader writes their status
and runs the deletion cleanup. A leader that starts reconciles every CRD, so a cleanup begun under a leader
that died completes under the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from typing import Any

import orjson
from google.protobuf.descriptor import Descriptor

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.callouts.client import Callouts
from server.crd import definition
from server.crd.conversion import WebhookConverter
from server.crd.resource import Lifecycle, resources
from server.kinds.apiextensions import CLEANUP_FINALIZER, CUSTOM_RESOURCE_DEFINITIONS, set_condition
from server.machinery import errors
from server.machinery.values import Obj
from server.objects import descriptors as protos
from server.objects.core import Core
from server.registry.resources import Resource
from server.runtime.informer import Handlers, Informer
from server.runtime.tasks import cancel_all
from server.runtime.worker import Worker
from server.runtime.workqueue import ExponentialBackoff, WorkQueue

log = logging.getLogger(__name__)

CRDS = core_pb2.ResourcePath(group=CUSTOM_RESOURCE_DEFINITIONS.group, version=CUSTOM_RESOURCE_DEFINITIONS.version,
                             resource=CUSTOM_RESOURCE_DEFINITIONS.resource)
Item = tuple[str, str]  # (a CRD's name, its group: the others in it are reconciled after it)
RECHECK = (0.05, 0.1, 0.2, 0.5, 1.0)  # seconds between looks at a kind whose objects are still being deleted
MANAGER = "kube-apiserver"  # apiextensions' controllers run in kube-apiserver: its loopback client's user agent
NO_CONFLICTS = {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"}
ESTABLISHED = {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
               "message": "the initial names have been accepted"}
NOT_ACCEPTED = {"type": "Established", "status": "False", "reason": "NotAccepted",
                "message": "not all names are accepted"}


class CrdController:
    def __init__(self, core: Core, callouts: Callouts | None = None) -> None:
        self._core = core
        self._callouts = callouts or Callouts()
        self._crds: dict[str, Obj] = {}  # by name, as last seen (the informer's, or this controller's write)
        self._served: dict[str, tuple[bytes, list[Resource]]] = {}  # by name: (what they were built from, them)
        self._lifecycles: dict[str, Lifecycle] = {}
        self._cleanups: dict[str, asyncio.Task[None]] = {}
        self._leading = False
        self._informer = Informer(core, CRDS)
        self._informer.add_handlers(Handlers(on_add=self._added, on_update=lambda _, crd: self._changed(crd),
                                             on_delete=self._deleted))
        self._worker = self._new_worker()

    def _new_worker(self) -> Worker[Item]:
        return Worker(WorkQueue(ExponentialBackoff()), self._sync, name="capstan-crd-controller")

    async def start(self) -> None:
        """Serve the CRDs already stored before returning (so a restarted server serves them at once), then
        follow changes in the background."""
        if self._worker.queue.shutting_down():
            self._worker = self._new_worker()
        await self._core.descriptors.load()
        self._core.descriptors.listeners.append(self._descriptors_registered)
        await self._informer.start()
        for name in list(self._crds):
            await self._reconcile(name)
        self._worker.start()

    async def stop(self) -> None:
        await self._informer.stop()
        await self._worker.stop()
        await cancel_all(self._cleanups.values())

    async def lead(self) -> None:
        """Write statuses and clean up deleted CRDs: every CRD is reconciled now, later ones as they come."""
        self._leading = True
        for name in list(self._crds):
            await self._reconcile(name)

    async def unlead(self) -> None:
        """Stop writing at once (another core leads now); serving goes on."""
        self._leading = False
        await cancel_all(self._cleanups.values())

    def running(self) -> bool:
        """Started and not stopped or dead (its /healthz poststarthook check)."""
        return self._informer.running() and self._worker.running()

    def _added(self, crd: Obj, initial: bool) -> None:
        if initial:
            self._crds[_name(crd)] = crd  # start() reconciles what the first list holds
        else:
            self._changed(crd)

    def _changed(self, crd: Obj) -> None:
        self._crds[_name(crd)] = crd
        self._worker.queue.add((_name(crd), definition.spec(crd).get("group") or ""))

    def _deleted(self, crd: Obj) -> None:
        self._crds.pop(_name(crd), None)
        self._worker.queue.add((_name(crd), definition.spec(crd).get("group") or ""))

    async def _sync(self, item: Item) -> None:
        """The CRD, then the others of its group (a name it freed or took may change theirs); group "" is the
        CRD alone (CRDs are never in the core group)."""
        name, group = item
        await self._reconcile(name)
        if not group:
            return
        for other, seen in list(self._crds.items()):
            if other != name and definition.spec(seen).get("group") == group:
                await self._reconcile(other)

    async def _reconcile(self, name: str) -> None:
        crd = self._crds.get(name)
        if crd is None:
            self._unserve(name)
            return
        lifecycle = self._lifecycles.setdefault(name, Lifecycle())
        if (crd.get("metadata") or {}).get("deletionTimestamp"):
            lifecycle.terminating = True
            if definition.condition_true(crd, "Established") and name not in self._served:
                self._serve(name, crd, lifecycle)  # a restart while terminating: deletes must still reach objects
            cleanup = CLEANUP_FINALIZER in (crd["metadata"].get("finalizers") or [])
            if self._leading and cleanup and name not in self._cleanups:
                task = asyncio.get_running_loop().create_task(self._clean_up(name), name=f"capstan-crd-cleanup-{name}")
                self._cleanups[name] = task
                task.add_done_callback(lambda _: self._cleanups.pop(name, None))
            return
        lifecycle.terminating = False
        wanted = copy.deepcopy(crd)
        accepted, names_condition = self._accepted_names(crd)
        status = wanted.setdefault("status", {})
        status["acceptedNames"] = accepted
        set_condition(wanted, names_condition)
        was_established = definition.condition_true(crd, "Established")
        if names_condition["status"] == "True":
            message = self._message(wanted)
            self._serve(name, wanted, lifecycle, message)
            set_condition(wanted, ESTABLISHED)
        elif not was_established:
            set_condition(wanted, NOT_ACCEPTED)
        if self._leading and wanted.get("status") != crd.get("status"):
            await self._write_status(wanted)

    def _accepted_names(self, crd: Obj) -> tuple[dict[str, Any], dict[str, str]]:
        """calculateNamesAndConditions: each requested name that is the accepted one or unused is accepted."""
        group = definition.spec(crd).get("group")
        resources_used: set[str] = set()
        kinds_used: set[str] = set()
        for other_name, other in self._crds.items():
            if other_name == _name(crd) or definition.spec(other).get("group") != group:
                continue
            names = (other.get("status") or {}).get("acceptedNames") or {}
            resources_used.update(n for n in (names.get("plural"), names.get("singular")) if n)
            resources_used.update(names.get("shortNames") or ())
            kinds_used.update(n for n in (names.get("kind"), names.get("listKind")) if n)
        requested = definition.spec(crd).get("names") or {}
        accepted = dict((crd.get("status") or {}).get("acceptedNames") or {})
        condition: dict[str, str] = {}

        def conflict(reason: str, message: str) -> None:
            condition.update(type="NamesAccepted", status="False", reason=reason, message=message)

        for field, reason, used in (("plural", "PluralConflict", resources_used),
                                    ("singular", "SingularConflict", resources_used)):
            problem = _in_use(requested.get(field) or "", accepted.get(field) or "", used)
            if problem:
                conflict(reason, problem)
            else:
                accepted[field] = requested.get(field) or ""
        short_names = list(requested.get("shortNames") or [])
        if short_names != list(accepted.get("shortNames") or []):
            mine = set(accepted.get("shortNames") or [])
            problems = [p for s in short_names if s not in mine and (p := _in_use(s, "", resources_used))]
            if problems:
                conflict("ShortNamesConflict", problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]")
            elif short_names:
                accepted["shortNames"] = short_names
            else:
                accepted.pop("shortNames", None)
        for field, reason in (("kind", "KindConflict"), ("listKind", "ListKindConflict")):
            problem = _in_use(requested.get(field) or "", accepted.get(field) or "", kinds_used)
            if problem:
                conflict(reason, problem)
            else:
                accepted[field] = requested.get(field) or ""
        if requested.get("categories"):
            accepted["categories"] = list(requested["categories"])
        else:
            accepted.pop("categories", None)
        ordered = {k: accepted[k] for k in ("plural", "singular", "shortNames", "kind", "listKind", "categories")
                   if k in accepted}
        return ordered, condition or dict(NO_CONFLICTS)

    def _message(self, crd: Obj) -> Descriptor | None:
        """The protobuf message the CRD names, if it can carry the kind; a ProtobufServed condition says which
        (server/objects/descriptors.py)."""
        full_name = ((crd.get("metadata") or {}).get("annotations") or {}).get(protos.ANNOTATION)
        if not full_name:
            return None
        message = self._core.descriptors.message(full_name)
        problem = protos.usable(message)
        if problem:
            set_condition(crd, {"type": "ProtobufServed", "status": "False", "reason": "MessageUnusable",
                                "message": f"{full_name} {problem}"})
            return None
        set_condition(crd, {"type": "ProtobufServed", "status": "True", "reason": "MessageRegistered",
                            "message": f"stored and served in protobuf as {full_name}"})
        return message

    def _descriptors_registered(self) -> None:
        """New messages: CRDs naming one may now be served in protobuf."""
        for name, crd in list(self._crds.items()):
            if protos.ANNOTATION in ((crd.get("metadata") or {}).get("annotations") or {}):
                self._worker.queue.add((name, ""))

    def _serve(self, name: str, crd: Obj, lifecycle: Lifecycle, message: Descriptor | None = None) -> None:
        """Register the CRD's served versions, unless what they are built from is unchanged."""
        status = crd.get("status") or {}
        basis = orjson.dumps([crd.get("spec"), status.get("acceptedNames"), status.get("storedVersions"),
                              message.full_name if message is not None else ""], option=orjson.OPT_SORT_KEYS)
        old = self._served.get(name)
        if old is not None and old[0] == basis:
            return
        converter = WebhookConverter(self._callouts, crd) if _webhook_conversion(crd) else None
        new = resources(crd, lifecycle, message, converter)
        self._core.registry.replace(old[1] if old else (), new)
        self._core.context.renderings.clear()  # defaults on read may differ under the new schema
        self._served[name] = (basis, new)

    def _unserve(self, name: str) -> None:
        old = self._served.pop(name, None)
        if old is not None:
            self._core.registry.replace(old[1], ())
        self._lifecycles.pop(name, None)

    async def _write_status(self, crd: Obj) -> bool:
        """Write crd's status (the resourceVersion it carries is the precondition); False when it lost a race
        or the CRD is gone (the event that follows brings the news)."""
        path = core_pb2.ResourcePath(group=CRDS.group, version=CRDS.version, resource=CRDS.resource,
                                     name=_name(crd), subresource="status")
        body = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", **crd}
        try:
            response = await self._core.update(core_pb2.UpdateRequest(
                path=path, object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(body)),
                options=meta_pb2.UpdateOptions(fieldManager=MANAGER)))
        except errors.ApiError as err:
            if err.code not in (404, 409):
                log.warning("CRD %s: status update failed: %s", _name(crd), err)
            return False
        written = orjson.loads(response.object.data)
        self._crds[_name(crd)] = written
        return True

    async def _clean_up(self, name: str) -> None:
        """The finalizer's work: delete every object of the kind, then let the CRD go."""
        await self._terminating(name, {"type": "Terminating", "status": "True", "reason": "InstanceDeletionInProgress",
                                       "message": "CustomResource deletion is in progress"})
        served = self._served.get(name)
        if served is not None and served[1]:
            attempt = 0
            while await self._remaining(served[1][0]):
                await asyncio.sleep(RECHECK[min(attempt, len(RECHECK) - 1)])
                attempt += 1
            done = {"type": "Terminating", "status": "False", "reason": "InstanceDeletionCompleted",
                    "message": "removed all instances"}
        else:
            done = {"type": "Terminating", "status": "False", "reason": "NeverEstablished",
                    "message": "resource was never established"}
        await self._terminating(name, done)
        for _ in range(16):
            crd = await self._get(name)
            if crd is None:
                return
            finalizers = [f for f in crd["metadata"].get("finalizers") or [] if f != CLEANUP_FINALIZER]
            crd["metadata"]["finalizers"] = finalizers
            path = core_pb2.ResourcePath(group=CRDS.group, version=CRDS.version, resource=CRDS.resource, name=name)
            body = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", **crd}
            try:
                await self._core.update(core_pb2.UpdateRequest(
                    path=path, object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(body))))
                return
            except errors.ApiError as err:
                if err.code == 404:
                    return
                if err.code != 409:
                    log.warning("CRD %s: removing the cleanup finalizer failed: %s", name, err)
                    return

    async def _terminating(self, name: str, condition: dict[str, str]) -> None:
        for _ in range(16):
            crd = await self._get(name)
            if crd is None or not set_condition(crd, condition):
                return
            if await self._write_status(crd):
                return

    async def _get(self, name: str) -> Obj | None:
        path = core_pb2.ResourcePath(group=CRDS.group, version=CRDS.version, resource=CRDS.resource, name=name)
        try:
            got = await self._core.get(core_pb2.GetRequest(path=path))
        except errors.ApiError:
            return None
        crd: Obj = orjson.loads(got.object.data)
        return crd

    async def _remaining(self, resource: Resource) -> int:
        """Delete the kind's objects (all namespaces); how many are still there (held by finalizers)."""
        path = core_pb2.ResourcePath(group=resource.group, version=resource.version, resource=resource.resource)
        with contextlib.suppress(errors.ApiError):
            await self._core.delete_collection(core_pb2.DeleteCollectionRequest(path=path))
        try:
            listed = await self._core.list(core_pb2.ListRequest(path=path))
        except errors.ApiError:
            return 0
        return len(listed.items)


def _name(crd: Obj) -> str:
    return str((crd.get("metadata") or {}).get("name") or "")


def _in_use(requested: str, accepted: str, used: set[str]) -> str:
    """equalToAcceptedOrFresh: "" when the name may be served, else kube's message."""
    if requested == accepted or requested not in used:
        return ""
    return f'"{requested}" is already in use'


def _webhook_conversion(crd: Obj) -> bool:
    conversion = definition.spec(crd).get("conversion") or {}
    return conversion.get("strategy") == "Webhook" and len(definition.versions(crd)) > 1
