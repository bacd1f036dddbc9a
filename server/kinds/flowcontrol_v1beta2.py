"""flowcontrol.apiserver.k8s.io/v1beta2 FlowSchema and PriorityLevelConfiguration, served from the v1beta3 storage
as kube-apiserver 1.28 serves them (v1beta3 is the storage and preferred version; discovery lists it first).

The two versions differ in one field: v1beta2's limited.assuredConcurrencyShares is v1beta3's (and the internal)
limited.nominalConcurrencyShares (pkg/apis/flowcontrol/v1beta2/conversion.go). So a v1beta2 object is defaulted
as v1beta2 (SetDefaults_LimitedPriorityLevelConfiguration: assuredConcurrencyShares 0 is 30, lendablePercent 0;
the rest as v1beta3), stored as v1beta3 with the field renamed, validated by the same rules as v1beta3 (kube
validates the internal object) with the field named as the request's version names it
(getVersionedFieldNameForConcurrencyShares), and read back renamed. Tables and field selectors read the stored
v1beta3 form, as kube's printers read the internal object.

Example: {"spec": {"type": "Limited", "limited": {"assuredConcurrencyShares": 5, ...}}} through v1beta2 is read
through v1beta3 as {"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5, ...}}}, and back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from capstan.api.flowcontrol.v1beta2 import flowcontrol_v1beta2_pb2 as v1beta2_pb2
from server.kinds import flowcontrol
from server.machinery.schema import ProtoSchema
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.registry.resources import StoredAs
from server.registry.strategy import Declared

VERSION = "v1beta2"
V1BETA2 = "assuredConcurrencyShares"
V1BETA3 = "nominalConcurrencyShares"
FLOW_SCHEMA = ProtoSchema(v1beta2_pb2.FlowSchema)
PRIORITY_LEVEL = ProtoSchema(v1beta2_pb2.PriorityLevelConfiguration)


def _converter(rename: tuple[str, str] | None = None) -> Callable[[Obj], Obj]:
    """A conversion between the versions: spec.limited's rename[0] named rename[1], in its place; all else the
    same. Not retyped through the other version's message: a pointer set to zero (lendablePercent 0) stays."""
    def convert(obj: Obj) -> Obj:
        out = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
        spec = out.get("spec")
        limited = spec.get("limited") if isinstance(spec, dict) else None
        if rename is not None and isinstance(spec, dict) and isinstance(limited, dict) and rename[0] in limited:
            limited = {(rename[1] if k == rename[0] else k): v for k, v in limited.items()}
            out["spec"] = {**spec, "limited": limited}
        return out
    return convert


TO_V1BETA3 = _converter((V1BETA2, V1BETA3))
FROM_V1BETA3 = _converter((V1BETA3, V1BETA2))


def default_priority_level(obj: Obj) -> None:
    """v1beta2's SetDefaults_*: v1beta3's under the v1beta2 name of the shares."""
    limited = (obj.get("spec") or {}).get("limited") if isinstance(obj.get("spec"), dict) else None
    if isinstance(limited, dict) and not limited.get(V1BETA2):
        limited[V1BETA2] = 30
    flowcontrol.default_priority_level(obj)
    if isinstance(limited, dict):
        limited.pop(V1BETA3, None)  # v1beta3's default of a field v1beta2 does not have


def validate_priority_level(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidatePriorityLevelConfiguration of the converted object, the shares named as v1beta2 names them."""
    converted = TO_V1BETA3(obj)
    at = "spec.limited."
    return [dataclasses.replace(e, field=at + V1BETA2) if e.field == at + V1BETA3 else e
            for e in flowcontrol.validate_priority_level(converted, old)]


def _deprecation(kind: str) -> str:
    """kube's warning on every answer about the kind at v1beta2 (its prerelease lifecycle: deprecated in 1.26,
    removed in 1.29, replaced by v1beta3), as deprecation.WarningMessage words it."""
    return (f"{flowcontrol.GROUP}/{VERSION} {kind} is deprecated in v1.26+, unavailable in v1.29+; "
            f"use {flowcontrol.GROUP}/v1beta3 {kind}")


FLOW_SCHEMAS = dataclasses.replace(
    flowcontrol.FLOW_SCHEMAS, version=VERSION, schema=FLOW_SCHEMA, deprecation_warning=_deprecation("FlowSchema"),
    storage_group_version=flowcontrol.FLOW_SCHEMAS.api_version,
    stored_as=StoredAs(group=flowcontrol.GROUP, resource="flowschemas", schema=flowcontrol.FLOW_SCHEMAS.schema,
                       to_storage=_converter(), from_storage=_converter()),
)

PRIORITY_LEVEL_CONFIGURATIONS = dataclasses.replace(
    flowcontrol.PRIORITY_LEVEL_CONFIGURATIONS, version=VERSION, schema=PRIORITY_LEVEL,
    deprecation_warning=_deprecation("PriorityLevelConfiguration"),
    storage_group_version=flowcontrol.PRIORITY_LEVEL_CONFIGURATIONS.api_version,
    strategy=Declared(tracks_generation=True, defaults=default_priority_level, prepare=flowcontrol.empty_status,
                      validation=validate_priority_level),
    stored_as=StoredAs(
        group=flowcontrol.GROUP, resource="prioritylevelconfigurations",
        schema=flowcontrol.PRIORITY_LEVEL_CONFIGURATIONS.schema,
        to_storage=TO_V1BETA3, from_storage=FROM_V1BETA3),
)

KINDS = (FLOW_SCHEMAS, PRIORITY_LEVEL_CONFIGURATIONS)
