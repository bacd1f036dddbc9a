"""apiregistration.k8s.io/v1 APIService, stored and validated as kube-aggregator 1.28 does
(k8s.io/kube-aggregator/pkg/apis/apiregistration/validation, pkg/registry/apiservice).

An APIService is named <version>.<group> (`v1.` for the core group, `v1.apps`) and says who serves that group
version: no spec.service means the API server itself (a Local APIService; server/controllers/apiservices.py keeps
one for every group version Capstan serves). Proxying to an APIService's Service is not done yet: a user's
APIService is stored and listed, and its group is not served.
"""

from __future__ import annotations

from typing import Any

from capstan.api.apiregistration.v1 import apiregistration_pb2
from server.kinds.admissionregistration import _service_errors
from server.kinds.templates import retyped
from server.machinery import meta
from server.machinery.schema import ProtoSchema
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.machinery.values import text_of as _text
from server.registry.resources import Resource, Subresource
from server.registry.strategy import Declared

GROUP = "apiregistration.k8s.io"
MAX_GROUP_PRIORITY = 20000
MAX_VERSION_PRIORITY = 1000


def default_api_service(obj: Obj) -> None:
    """SetDefaults_ServiceReference: a Service's port is 443."""
    service = _dict(obj.get("spec")).get("service")
    if isinstance(service, dict):
        service.setdefault("port", 443)


def prepare_api_service(obj: Obj, old: Obj | None) -> None:
    """apiServerStrategy: a new APIService has no status, an update keeps the stored one."""
    if old is None:
        obj.pop("status", None)
    elif "status" in old:
        obj["status"] = old["status"]
    else:
        obj.pop("status", None)


def prepare_status(obj: Obj, old: Obj) -> None:
    """apiServerStatusStrategy: the stored spec stays."""
    if "spec" in old:
        obj["spec"] = old["spec"]


def validate_api_service(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateAPIService."""
    spec = _dict(obj.get("spec"))
    group, version = _text(spec.get("group")), _text(spec.get("version"))
    required = f"{version}.{group}"
    name = _text(meta.meta(obj).get("name"))
    errs: list[FieldError] = []
    if name and not names.is_path_segment_name(name) and name != required:
        errs.append(
            FieldError.invalid(
                "metadata.name", name, f'must be `spec.version+"."+spec.group`: {names.go_quote(required)}'
            )
        )
    if not group and version != "v1":
        errs.append(FieldError.required("spec.group", "only v1 may have an empty group and it better be legacy kube"))
    if group:
        errs += [FieldError.invalid("spec.group", group, m) for m in names.is_dns1123_subdomain(group)]
    errs += [FieldError.invalid("spec.version", version, m) for m in names.is_dns1035_label(version)]
    group_priority = spec.get("groupPriorityMinimum") or 0
    if not 0 < group_priority <= MAX_GROUP_PRIORITY:
        errs.append(
            FieldError.invalid("spec.groupPriorityMinimum", group_priority, "must be positive and less than 20000")
        )
    version_priority = spec.get("versionPriority") or 0
    if not 0 < version_priority <= MAX_VERSION_PRIORITY:
        errs.append(FieldError.invalid("spec.versionPriority", version_priority, "must be positive and less than 1000"))
    ca_bundle: Any = spec.get("caBundle") or ""
    service = spec.get("service")
    if not isinstance(service, dict):
        if ca_bundle:
            errs.append(
                FieldError.invalid(
                    "spec.caBundle", f"{len(ca_bundle) * 3 // 4} bytes", "local APIServices may not have a caBundle"
                )
            )
        if spec.get("insecureSkipTLSVerify"):
            errs.append(
                FieldError.invalid(
                    "spec.insecureSkipTLSVerify", True, "local APIServices may not have insecureSkipTLSVerify"
                )
            )
        return errs
    errs += _service_errors(service, "spec.service")
    if spec.get("insecureSkipTLSVerify") and ca_bundle:
        errs.append(FieldError.invalid("spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present"))
    return errs


SCHEMA = ProtoSchema(apiregistration_pb2.APIService)

API_SERVICES = Resource(
    group=GROUP,
    version="v1",
    resource="apiservices",
    kind="APIService",
    singular="apiservice",
    namespaced=False,
    schema=SCHEMA,
    categories=("api-extensions",),
    subresources=(
        Subresource(
            "status", "APIService", ("get", "patch", "update"), ("status",), metadata_reset=(), prepare=prepare_status
        ),
    ),
    strategy=Declared(
        standard_finalizers=False,
        name_rule=names.validate_path_segment_name, defaults=retyped(SCHEMA, default_api_service),
        prepare=prepare_api_service, validation=validate_api_service, unconditional_update=False,
    ),
)

KINDS = (API_SERVICES,)
