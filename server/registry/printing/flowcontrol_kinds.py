"""Table columns of flowcontrol.apiserver.k8s.io FlowSchema and PriorityLevelConfiguration, as kube-apiserver's
printers (pkg/printers/internalversion/printers.go: printFlowSchema, printPriorityLevelConfiguration) print them.

Descriptions are the SwaggerDoc text of the fields the printers name (flowcontrol v1beta3) or the printers' own
words (MissingPL). A FlowSchema's MissingPL is its Dangling condition's status ("False": the level exists), "?"
before the APF controller wrote one; a level that is not Limited prints "<none>" for its shares and queuing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.registry.printing.columns import AGE, NAME
from server.registry.strategy import Column

GROUP = "flowcontrol.apiserver.k8s.io"
PRIORITY_LEVEL_DESCRIPTION = "`name` is the name of the priority level configuration being referenced Required."
MATCHING_PRECEDENCE_DESCRIPTION = (
    "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema "
    "is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each "
    "MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be "
    "set to 1000 as default.")
DISTINGUISHER_METHOD_DESCRIPTION = (
    "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` "
    "specifies that the distinguisher is disabled and thus will always be the empty string.")
MISSING_PL_DESCRIPTION = "references a broken or non-existent PriorityLevelConfiguration"
TYPE_DESCRIPTION = (
    "`type` indicates whether this priority level is subject to limitation on request execution.  A value of "
    "`\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) "
    "and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means "
    "that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity "
    "is made available exclusively to this priority level. Required.")
NOMINAL_CONCURRENCY_SHARES_DESCRIPTION = (
    "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of "
    "this level. This is the number of execution seats available at this priority level. This is used both for "
    "requests dispatched from this priority level as well as requests dispatched from other priority levels "
    "borrowing seats from this level. The server's concurrency limit (ServerCL) is divided among the Limited "
    "priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) "
    "sum_ncs = sum[priority level k] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense "
    "of every other priority level. This field has a default value of 30.")
QUEUES_DESCRIPTION = (
    "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. "
    "The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the "
    "distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.")
HAND_SIZE_DESCRIPTION = (
    "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When "
    "enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the "
    "hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is "
    "put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be "
    "significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing "
    "documentation for more extensive guidance on setting this field.  This field has a default value of 8.")
QUEUE_LENGTH_LIMIT_DESCRIPTION = (
    "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority "
    "level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be "
    "defaulted to 50.")
NONE = "<none>"


def _spec(obj: Obj) -> Mapping[str, Any]:
    return _dict(obj.get("spec"))


def priority_level(obj: Obj) -> str:
    return str(_dict(_spec(obj).get("priorityLevelConfiguration")).get("name", ""))


def matching_precedence(obj: Obj) -> int:
    value = _spec(obj).get("matchingPrecedence", 0)
    return value if isinstance(value, int) else 0


def distinguisher_method(obj: Obj) -> str:
    method = _spec(obj).get("distinguisherMethod")
    return str(method.get("type", "")) if isinstance(method, dict) else NONE


def missing_priority_level(obj: Obj) -> str:
    """The first Dangling condition's status, "?" without one."""
    for condition in _dict(obj.get("status")).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Dangling":
            return str(condition.get("status", ""))
    return "?"


def level_type(obj: Obj) -> str:
    return str(_spec(obj).get("type", ""))


def _limited(obj: Obj) -> Mapping[str, Any] | None:
    limited = _spec(obj).get("limited")
    return limited if isinstance(limited, dict) else None


def nominal_concurrency_shares(obj: Obj) -> object:
    limited = _limited(obj)
    return NONE if limited is None else limited.get("nominalConcurrencyShares", 0)


def _queuing(field: str) -> Any:
    def cell(obj: Obj) -> object:
        limited = _limited(obj)
        queuing = _dict(limited.get("limitResponse")).get("queuing") if limited is not None else None
        return queuing.get(field, 0) if isinstance(queuing, dict) else NONE
    return cell


FLOW_SCHEMA_COLUMNS = (
    NAME,
    Column("PriorityLevel", "string", PRIORITY_LEVEL_DESCRIPTION, priority_level),
    Column("MatchingPrecedence", "string", MATCHING_PRECEDENCE_DESCRIPTION, matching_precedence),
    Column("DistinguisherMethod", "string", DISTINGUISHER_METHOD_DESCRIPTION, distinguisher_method),
    AGE,
    Column("MissingPL", "string", MISSING_PL_DESCRIPTION, missing_priority_level),
)
PRIORITY_LEVEL_COLUMNS = (
    NAME,
    Column("Type", "string", TYPE_DESCRIPTION, level_type),
    Column("NominalConcurrencyShares", "string", NOMINAL_CONCURRENCY_SHARES_DESCRIPTION, nominal_concurrency_shares),
    Column("Queues", "string", QUEUES_DESCRIPTION, _queuing("queues")),
    Column("HandSize", "string", HAND_SIZE_DESCRIPTION, _queuing("handSize")),
    Column("QueueLengthLimit", "string", QUEUE_LENGTH_LIMIT_DESCRIPTION, _queuing("queueLengthLimit")),
    AGE,
)

COLUMNS: Mapping[tuple[str, str], tuple[Column, ...]] = {
    (GROUP, "flowschemas"): FLOW_SCHEMA_COLUMNS,
    (GROUP, "prioritylevelconfigurations"): PRIORITY_LEVEL_COLUMNS,
}


def _precedence_then_name(obj: Obj) -> tuple[object, ...]:
    """FlowSchemaSequence's order: the lower matchingPrecedence first, then by name."""
    precedence = _spec(obj).get("matchingPrecedence", 0)
    return (precedence if isinstance(precedence, int) else 0, str((obj.get("metadata") or {}).get("name") or ""))


ROW_ORDER: Mapping[tuple[str, str], Callable[[Obj], tuple[object, ...]]] = {
    (GROUP, "flowschemas"): _precedence_then_name,
}
