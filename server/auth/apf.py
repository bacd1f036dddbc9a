"""API Priority and Fairness classification, as kube-apiserver's APF filter classifies every authenticated request
(k8s.io/apiserver/pkg/util/flowcontrol: apf_controller.go's Match and rule.go): the FlowSchemas in order of
matchingPrecedence (then name), the first whose subjects and rules match the request and whose priority level
exists wins; a request nothing matches falls to `catch-all`. The guard classifies each call after impersonation
and before authorization, where kube's filter sits, and notes the result for the response headers
(server/machinery/flowcontrol.py).

The configuration is followed by informers in every core, so a FlowSchema created now classifies the next
request. The nominal concurrency of each priority level (apiserver_flowcontrol_nominal_limit_seats) is computed
from the configuration as kube computes it (ceil(server seats x shares / sum of every level's shares)), over this
server's in-flight limits; the seats themselves are enforced by Capstan's own limiter
(server/machinery/limits/), which does not queue by priority level.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.attributes import Attributes
from server.machinery.user import UserInfo
from server.runtime.informer import Handlers, Informer, SharedInformers, on_change

Obj = dict[str, Any]
GROUP, VERSION = "flowcontrol.apiserver.k8s.io", "v1beta3"
FLOW_SCHEMAS = core_pb2.ResourcePath(group=GROUP, version=VERSION, resource="flowschemas")
PRIORITY_LEVELS = core_pb2.ResourcePath(group=GROUP, version=VERSION, resource="prioritylevelconfigurations")
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
_REMEMBERED = 4096  # classifications kept: a server's users x verbs x resources in use, within a few hundred KiB


class Classifier:
    """Follows the FlowSchemas and priority levels; `classify` answers from what it holds (no store read)."""

    def __init__(self, informers: SharedInformers, server_seats: int) -> None:
        self._schemas: Informer[Obj] = informers.informer(FLOW_SCHEMAS)
        self._levels: Informer[Obj] = informers.informer(PRIORITY_LEVELS)
        self._server_seats = server_seats
        self._started: list[Informer[Obj]] = []
        self._handlers: Handlers[Obj] = on_change(self._changed)
        # (spec, FlowSchema uid, priority level uid) in matching order, dangling ones left out; None: stale
        self._ordered: list[tuple[Obj, str, str]] | None = None
        # Answers by what a FlowSchema can match on (user, groups, verb, group, resource, namespace or path),
        # emptied when the configuration changes and when it holds _REMEMBERED of them.
        self._answers: dict[tuple[object, ...], tuple[str, str] | None] = {}

    async def start(self) -> None:
        for informer in (self._schemas, self._levels):
            informer.add_handlers(self._handlers)
            await informer.start()
            self._started.append(informer)

    async def stop(self) -> None:
        started, self._started = self._started, []
        for informer in started:
            informer.remove_handlers(self._handlers)
            await informer.stop()

    def _changed(self, old: Obj | None, new: Obj | None) -> None:
        self._ordered = None
        self._answers = {}

    def _order(self) -> list[tuple[Obj, str, str]]:
        levels = {_name(level): _uid(level) for level in self._levels.cache.values()}
        ordered = []
        for schema in sorted(self._schemas.cache.values(), key=lambda fs: (
                int((fs.get("spec") or {}).get("matchingPrecedence") or 1000), _name(fs))):
            spec = schema.get("spec") or {}
            level = levels.get(str((spec.get("priorityLevelConfiguration") or {}).get("name", "")))
            if level is not None:  # a dangling FlowSchema matches nothing
                ordered.append((spec, _uid(schema), level))
        return ordered

    def classify(self, attrs: Attributes) -> tuple[str, str] | None:
        """(FlowSchema uid, priority level uid) of the request, or None with no configuration to match."""
        user = attrs.user
        key = (user.name, user.groups, attrs.verb, attrs.resource_request, attrs.api_group, attrs.resource,
               attrs.subresource, attrs.namespace, "" if attrs.resource_request else attrs.path)
        try:
            return self._answers[key]
        except KeyError:
            pass
        if self._ordered is None:
            self._ordered = self._order()
        answer = None
        for spec, schema_uid, level_uid in self._ordered:
            if matches(spec, attrs):
                answer = schema_uid, level_uid
                break
        if len(self._answers) >= _REMEMBERED:
            self._answers = {}
        self._answers[key] = answer
        return answer

    def nominal_seats(self) -> dict[str, int]:
        """Each priority level's nominal concurrency limit, kube's computation over this server's seats."""
        shares = {_name(level): _shares(level) for level in self._levels.cache.values()}
        total = sum(shares.values())
        if total <= 0:
            return dict.fromkeys(shares, 0)
        return {name: math.ceil(self._server_seats * share / total) for name, share in shares.items()}

    def collector(self) -> Collector:
        return _NominalSeats(self)


class _NominalSeats(Collector):
    def __init__(self, classifier: Classifier) -> None:
        self._classifier = classifier

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("apiserver_flowcontrol_nominal_limit_seats",
                                   "Nominal number of execution seats configured for each priority level",
                                   labels=["priority_level"])
        for name, seats in sorted(self._classifier.nominal_seats().items()):
            family.add_metric([name], seats)
        yield family


def matches(spec: Obj, attrs: Attributes) -> bool:
    """A FlowSchema spec's subjects and rules against the request (kube's matchesFlowSchema)."""
    for policy in spec.get("rules") or []:
        if any(_subject(subject, attrs.user) for subject in policy.get("subjects") or []) and _rules(policy, attrs):
            return True
    return False


def _subject(subject: Obj, user: UserInfo) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        name = str((subject.get("user") or {}).get("name", ""))
        return name in ("*", user.name)
    if kind == "Group":
        name = str((subject.get("group") or {}).get("name", ""))
        return name == "*" or name in user.groups
    if kind == "ServiceAccount":
        account = subject.get("serviceAccount") or {}
        if not user.name.startswith(SERVICE_ACCOUNT_PREFIX):
            return False
        namespace, _, name = user.name[len(SERVICE_ACCOUNT_PREFIX):].partition(":")
        return account.get("namespace") == namespace and account.get("name") in ("*", name)
    return False


def _rules(policy: Obj, attrs: Attributes) -> bool:
    if attrs.resource_request:
        return any(_resource_rule(rule, attrs) for rule in policy.get("resourceRules") or [])
    return any(_non_resource_rule(rule, attrs) for rule in policy.get("nonResourceRules") or [])


def _resource_rule(rule: Obj, attrs: Attributes) -> bool:
    if not _any_of(rule.get("verbs"), attrs.verb) or not _any_of(rule.get("apiGroups"), attrs.api_group):
        return False
    resources = rule.get("resources") or []
    if not ("*" in resources or attrs.resource in resources
            or (attrs.subresource and f"{attrs.resource}/{attrs.subresource}" in resources)):
        return False
    if not attrs.namespace:
        return bool(rule.get("clusterScope"))
    return _any_of(rule.get("namespaces"), attrs.namespace)


def _non_resource_rule(rule: Obj, attrs: Attributes) -> bool:
    if not _any_of(rule.get("verbs"), attrs.verb):
        return False
    for url in rule.get("nonResourceURLs") or []:
        if url == "*" or url == attrs.path:
            return True
        if url.endswith("/*") and (attrs.path == url[:-2] or attrs.path.startswith(url[:-1])):
            return True
    return False


def _any_of(values: Any, wanted: str) -> bool:
    return isinstance(values, list) and ("*" in values or wanted in values)


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))


def _shares(level: Obj) -> int:
    spec = level.get("spec") or {}
    if spec.get("type") == "Exempt":
        return int((spec.get("exempt") or {}).get("nominalConcurrencyShares") or 0)
    return int((spec.get("limited") or {}).get("nominalConcurrencyShares") or 0)
