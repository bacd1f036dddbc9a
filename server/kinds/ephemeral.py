"""pods/ephemeralcontainers, through which ephemeral containers (kubectl debug's) are added to a running Pod.

As kube-apiserver 1.28 serves it (pkg/registry/core/pod/storage EphemeralContainersREST, strategy.go
podEphemeralContainersStrategy): a GET answers the Pod; an update or patch changes only spec.ephemeralContainers
(the rest of the spec and the status stay as stored, metadata as ResetObjectMetaForStatus leaves it), and is
validated by ValidatePodEphemeralContainersUpdate instead of ValidatePodUpdate: the whole spec as on create (each
new container defaulted and checked like any, with the ephemeral restrictions of server/kinds/podspec.py), and
the containers already there neither removed nor changed, matched by name since a patch may reorder them.

Example: a Pod with {"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]} stored, a PUT of
[{"name": "dbg", "image": "alpine"}] is 422 `spec.ephemeralContainers: Forbidden: existing ephemeral containers
"dbg" may not be changed` followed by the changed fields (kube prints a cmp.Diff of its internal structs there).
"""

from __future__ import annotations

from server.kinds import podspec
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.registry.resources import Subresource

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
FIELD = "spec.ephemeralContainers"


def validate_update(new: Obj, old: Obj) -> list[FieldError]:
    """ValidatePodEphemeralContainersUpdate: the Pod as validatePodMetadataAndSpec checks it, then the changes
    to the containers that were there (a static Pod's answer alone)."""
    errs = podspec.validate_pod_spec(new.get("spec") or {}, "spec", is_pod=True)
    if MIRROR_POD_ANNOTATION in ((old.get("metadata") or {}).get("annotations") or {}):
        return [FieldError.forbidden("", "static pods do not support ephemeral containers")]
    current = {c.get("name"): c for c in _containers(new)}
    for container in _containers(old):
        name = container.get("name") or ""
        changed = current.get(name)
        if changed is None:
            errs.append(FieldError.forbidden(FIELD, f"existing ephemeral containers {names.go_quote(name)} "
                                                    "may not be removed\n"))
        elif changed != container:
            diff = "".join(f"  {key}\n" for key in sorted({*changed, *container})
                           if changed.get(key) != container.get(key))
            errs.append(FieldError.forbidden(FIELD, f"existing ephemeral containers {names.go_quote(name)} "
                                                    f"may not be changed\n{diff}"))
    return errs


def _containers(pod: Obj) -> list[Obj]:
    return list((pod.get("spec") or {}).get("ephemeralContainers") or [])


# dropNonEphemeralContainerUpdates: metadata as ResetObjectMetaForStatus leaves it (deletionTimestamp and
# generation always stay as stored).
EPHEMERAL_CONTAINERS = Subresource(
    "ephemeralcontainers", "Pod", ("get", "patch", "update"), ("spec", "ephemeralContainers"),
    metadata_reset=("labels", "annotations", "finalizers", "ownerReferences"), validate=validate_update)
