"""The audit policy as kube-apiserver evaluates and validates it (audit/policy/checker.go, apis/audit/validation):
first matching rule wins, kube's resource/subresource/wildcard/non-resource matching, omitStages adding up,
omitManagedFields overriding, and a policy file kube refuses keeping the server from starting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from server.auth.attributes import Attributes
from server.auth.audit.policy import Level, PolicyError, load, parse
from server.auth.config import SecurityConfig
from server.auth.setup import ConfigError, start_security
from server.machinery.user import UserInfo
from server.objects.core import Core

ALICE = UserInfo("alice", groups=("team-a", "system:authenticated"))


def _policy(*rules: dict[str, Any], **top: Any) -> bytes:
    return orjson.dumps({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": list(rules), **top})


def res(verb: str, resource: str, *, group: str = "", sub: str = "", ns: str = "", name: str = "") -> Attributes:
    return Attributes(ALICE, verb, api_group=group, api_version="v1", resource=resource, subresource=sub,
                      namespace=ns, name=name)


def path(verb: str, url: str) -> Attributes:
    return Attributes(ALICE, verb, resource_request=False, path=url)


MATCHES = [
    # (rule, attributes, user is authenticated, matches)
    ({}, res("get", "pods", ns="a"), True, True),
    ({"users": ["alice"]}, res("get", "pods"), True, True),
    ({"users": ["bob"]}, res("get", "pods"), True, False),
    ({"users": ["alice"]}, res("get", "pods"), False, False),  # a 401 matches no rule naming users
    ({"userGroups": ["team-a"]}, res("get", "pods"), True, True),
    ({"userGroups": ["system:unauthenticated"]}, res("get", "pods"), False, False),
    ({"verbs": ["list", "watch"]}, res("watch", "pods"), True, True),
    ({"verbs": ["list"]}, res("get", "pods"), True, False),
    ({"resources": [{"group": ""}]}, res("get", "anything"), True, True),
    ({"resources": [{"group": ""}]}, res("get", "deployments", group="apps"), True, False),
    ({"resources": [{"group": "", "resources": ["pods"]}]}, res("get", "pods"), True, True),
    ({"resources": [{"group": "", "resources": ["pods"]}]}, res("get", "pods", sub="log"), True, False),
    ({"resources": [{"group": "", "resources": ["pods/log"]}]}, res("get", "pods", sub="log"), True, True),
    ({"resources": [{"group": "", "resources": ["pods/log"]}]}, res("get", "pods"), True, False),
    ({"resources": [{"group": "", "resources": ["*"]}]}, res("get", "pods", sub="status"), True, True),
    ({"resources": [{"group": "", "resources": ["*/status"]}]}, res("get", "nodes", sub="status"), True, True),
    ({"resources": [{"group": "", "resources": ["*/status"]}]}, res("get", "nodes"), True, False),
    ({"resources": [{"group": "", "resources": ["pods/*"]}]}, res("get", "pods", sub="exec"), True, True),
    ({"resources": [{"group": "", "resources": ["pods/*"]}]}, res("get", "pods"), True, True),  # kube's, too
    ({"resources": [{"group": "", "resources": ["secrets"], "resourceNames": ["s1"]}]},
     res("get", "secrets", ns="a", name="s1"), True, True),
    ({"resources": [{"group": "", "resources": ["secrets"], "resourceNames": ["s1"]}]},
     res("list", "secrets", ns="a"), True, False),
    ({"resources": [{"group": "apps", "resources": ["deployments"]}]},
     res("get", "deployments", group="apps"), True, True),
    ({"namespaces": ["kube-system"]}, res("get", "pods", ns="kube-system"), True, True),
    ({"namespaces": ["kube-system"]}, res("get", "pods", ns="default"), True, False),
    ({"namespaces": [""]}, res("get", "nodes"), True, True),  # "" is the cluster scope
    ({"namespaces": [""]}, res("get", "pods", ns="a"), True, False),
    ({"namespaces": ["a"]}, path("get", "/healthz"), True, False),  # resource rules never match paths
    ({"nonResourceURLs": ["/healthz"]}, path("get", "/healthz"), True, True),
    ({"nonResourceURLs": ["/healthz"]}, path("get", "/healthz/etcd"), True, False),
    ({"nonResourceURLs": ["/healthz*"]}, path("get", "/healthz/etcd"), True, True),
    ({"nonResourceURLs": ["/apis/*"]}, path("get", "/apis/apps"), True, True),
    ({"nonResourceURLs": ["*"]}, path("get", "/version"), True, True),
    ({"nonResourceURLs": ["*"]}, res("get", "pods"), True, False),
]


@pytest.mark.parametrize(("rule", "attributes", "authenticated", "matches"), MATCHES)
def test_rule_matching(rule: dict[str, Any], attributes: Attributes, authenticated: bool, matches: bool) -> None:
    policy = parse(_policy({"level": "Request", **rule}, {"level": "Metadata", "users": ["nobody"]}))
    decision = policy.decide(attributes, ALICE if authenticated else None)
    assert decision.level is (Level.REQUEST if matches else Level.NONE)


def test_first_matching_rule_decides_and_stages_add_up() -> None:
    policy = parse(_policy(
        {"level": "None", "verbs": ["watch"]},
        {"level": "RequestResponse", "resources": [{"group": "", "resources": ["configmaps"]}],
         "omitStages": ["ResponseStarted"], "omitManagedFields": False},
        {"level": "Metadata"},
        omitStages=["RequestReceived"], omitManagedFields=True))
    assert policy.decide(res("watch", "configmaps"), ALICE).level is Level.NONE
    first = policy.decide(res("get", "configmaps"), ALICE)
    assert (first.level, first.omit_stages, first.omit_managed_fields) == (
        Level.REQUEST_RESPONSE, frozenset({"RequestReceived", "ResponseStarted"}), False)
    rest = policy.decide(res("get", "pods"), ALICE)
    assert (rest.level, rest.omit_stages, rest.omit_managed_fields) == (
        Level.METADATA, frozenset({"RequestReceived"}), True)


def test_yaml_policy_file(tmp_path: Path) -> None:
    file = tmp_path / "policy.yaml"
    file.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
                    "  nonResourceURLs: [/version]\n")
    assert load(file).decide(path("get", "/version"), ALICE).level is Level.METADATA


BAD = [
    (_policy(), "loaded illegal policy with 0 rules"),
    (_policy({}), "rules[0].level: Required value"),
    (_policy({"level": "Everything"}), 'rules[0].level: Unsupported value: "Everything": supported values: '
                                       '"None", "Metadata", "Request", "RequestResponse"'),
    (_policy({"level": "Metadata", "nonResourceURLs": ["healthz"]}),
     'rules[0].nonResourceURLs[0]: Invalid value: "healthz": non-resource URL rules must begin with a \'/\' '
     'character'),
    (_policy({"level": "Metadata", "nonResourceURLs": ["/a*b"]}),
     "rules[0].nonResourceURLs[0]: Invalid value: \"/a*b\": non-resource URL wildcards '*' must be the final "
     "character of the rule"),
    (_policy({"level": "Metadata", "nonResourceURLs": ["/a"], "namespaces": ["x"]}),
     'rules[0].nonResourceURLs: Invalid value: []string{"/a"}: rules cannot apply to both regular resources '
     "and non-resource URLs"),
    (_policy({"level": "Metadata", "resources": [{"group": "apps/v1"}]}),
     'rules[0].resources.group: Invalid value: "apps/v1": a lowercase RFC 1123 subdomain'),
    (_policy({"level": "Metadata", "resources": [{"group": "", "resourceNames": ["x"]}]}),
     'rules[0].resources.resourceNames: Invalid value: []string{"x"}: using resourceNames requires at least '
     "one resource"),
    (_policy({"level": "Metadata", "omitStages": ["Never"]}),
     'rules[0].omitStages[0]: Invalid value: "Never": allowed stages are RequestReceived,ResponseStarted,'
     "ResponseComplete,Panic"),
    (_policy({"level": "Metadata"}, omitStages=["Never"]), 'omitStages[0]: Invalid value: "Never"'),
    (_policy({}, {"level": "x"}), "[rules[0].level: Required value, rules[1].level: Unsupported value"),
    (b'{"apiVersion": "audit.k8s.io/v1beta1", "kind": "Policy", "rules": [{"level": "None"}]}',
     'failed decoding: no kind "Policy" is registered for version "audit.k8s.io/v1beta1"'),
    (b"rules: [{level: None}]", "failed decoding: Object 'Kind' is missing in"),
    (b"rules: [", "failed decoding: yaml: line 1"),
]


@pytest.mark.parametrize(("body", "message"), BAD)
async def test_policy_kube_refuses_keeps_the_server_from_starting(
        core: Core, tmp_path: Path, body: bytes, message: str) -> None:
    file = tmp_path / "policy.yaml"
    file.write_bytes(body)
    with pytest.raises(PolicyError) as refused:
        load(file)
    assert message in str(refused.value)
    assert str(refused.value).endswith(f": from file {file}")
    with pytest.raises(ConfigError, match="from file"):
        await start_security(core, SecurityConfig(audit_policy_file=file, audit_log_path=str(tmp_path / "a.log")))


async def test_missing_policy_file_keeps_the_server_from_starting(core: Core, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="failed to read file path"):
        await start_security(core, SecurityConfig(audit_policy_file=tmp_path / "none.yaml", audit_log_path="-"))
