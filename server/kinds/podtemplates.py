"""core/v1 PodTemplate: a named pod template, defaulted and validated as every workload's template is.

Sources: kubernetes pkg/registry/core/podtemplate (strategy: generation 1 on create, raised by any change to
the template; storage: a delete answers with the deleted object), pkg/apis/core/validation (ValidatePodTemplate:
the name as a pod's, the template at `template`, e.g.

    template.spec.containers: Required value

) and the generated SetObjectDefaults_PodTemplate (the template's PodSpec defaults). Only metadata.name and
metadata.namespace select: kube registers no field label conversion for PodTemplate.
"""

from __future__ import annotations

from capstan.api.core.v1 import core_pb2 as core_v1
from server.kinds import podwarnings
from server.kinds.templates import default_template, dict_at, pod_template_errors, retyped
from server.machinery import meta
from server.machinery.schema import ProtoSchema
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.registry.resources import Resource
from server.registry.strategy import Declared

POD_TEMPLATE_SCHEMA = ProtoSchema(core_v1.PodTemplate)


def default_pod_template(obj: Obj) -> None:
    """The template is a struct, not a pointer: an absent one is defaulted as an empty one."""
    default_template(dict_at(obj, "template"))


def validate_pod_template(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidatePodTemplate and ValidatePodTemplateUpdate: the template is validated whole on every write."""
    return pod_template_errors(obj.get("template"), "template")


def pod_template_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """podTemplateStrategy.WarningsOnCreate/OnUpdate: the template's warnings, on update only when the
    generation rose (the template changed)."""
    if old is not None and meta.meta(obj).get("generation") == meta.meta(old).get("generation"):
        return []
    return podwarnings.template_warnings(obj.get("template"), "template")


POD_TEMPLATES = Resource(
    group="", version="v1", resource="podtemplates", kind="PodTemplate", singular="podtemplate", namespaced=True,
    schema=POD_TEMPLATE_SCHEMA,
    strategy=Declared(
        tracks_generation=True, returns_deleted_object=True,
        defaults=retyped(POD_TEMPLATE_SCHEMA, default_pod_template), validation=validate_pod_template,
        warnings=pod_template_warnings,
    ),
)

KINDS: tuple[Resource, ...] = (POD_TEMPLATES,)
