"""x-kubernetes-validations: CEL rules compiled when a CRD is written and run on every write of its objects.

Expected texts are apiextensions-apiserver 1.28's (validation.go's compile and cost errors, the CEL
validator's rule failures); the expression table checks the engine and kube's library against what
cel-go answers for the same rule.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from server.machinery.crdschema.cel import rules
from tests.server.client import Client, refused
from tests.server.crd.test_crds import CRDS, WIDGETS, crd_body, install, invalid_causes

Obj = dict[str, Any]
ROOT = "spec.versions[0].schema.openAPIV3Schema"
HINT = ("(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings "
        "are declared)")


def schema(*validations: Obj, **extra: Obj) -> Obj:
    return {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-validations": list(validations),
        "properties": {"replicas": {"type": "integer"}, "min": {"type": "integer"},
                       "name": {"type": "string", "maxLength": 20},
                       "items": {"type": "array", "maxItems": 10, "items": {"type": "integer"}},
                       "labels": {"type": "object", "maxProperties": 10,
                                  "additionalProperties": {"type": "string", "maxLength": 10}},
                       **extra}}}}


def go_rule(rule: str) -> str:
    return (f'apiextensions.ValidationRule{{Rule:"{rule}", Message:"", MessageExpression:"", '
            'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:""}')


# Each: rule on spec, the spec, True when it holds, else the error's detail.
@pytest.mark.parametrize(("rule", "spec", "want"), [
    ("self.items.all(x, x > 0)", {"items": [1, 2]}, True),
    ("self.items.exists(x, x == 2)", {"items": [1, 3]}, False),
    ("self.items.exists_one(x, x > 1)", {"items": [1, 2, 3]}, False),
    ("self.items.map(x, x * 2) == [2, 4]", {"items": [1, 2]}, True),
    ("self.items.filter(x, x > 1).size() == 1", {"items": [1, 2]}, True),
    ("self.labels.all(k, k.startsWith('a'))", {"labels": {"ab": "x", "b": "y"}}, False),
    ("size(self.name) <= 3", {"name": "abcd"}, False),
    ("has(self.name)", {}, False),
    ("!has(self.name) || self.name.matches('^[a-z]+$')", {"name": "Ab"}, False),
    ("self.name.contains('b') && self.name.endsWith('c')", {"name": "abc"}, True),
    ("timestamp('2024-01-01T00:00:00Z') < timestamp('2030-01-01T00:00:00Z')", {}, True),
    ("duration('90s') > duration('1m')", {}, True),
    ("self.replicas + 9223372036854775807 > 0", {"replicas": 1}, "integer overflow evaluating rule: "
     "self.replicas + 9223372036854775807 > 0"),
    ("self.replicas / 0 == 1", {"replicas": 1}, "division by zero evaluating rule: self.replicas / 0 == 1"),
    ("self.min == 1", {}, "no such key: min evaluating rule: self.min == 1"),
    ("self.items.isSorted()", {"items": [2, 1]}, False),
    ("self.items.sum() == 6 && self.items.min() == 1 && self.items.max() == 3", {"items": [1, 2, 3]}, True),
    ("self.items.indexOf(2) == 1 && self.items.lastIndexOf(9) == -1", {"items": [1, 2]}, True),
    ("self.name.lowerAscii() == 'abc' && self.name.upperAscii() == 'ABC'", {"name": "aBc"}, True),
    ("self.name.charAt(1) == 'b' && self.name.indexOf('c') == 2 && self.name.substring(1) == 'bc'",
     {"name": "abc"}, True),
    ("self.name.split('-') == ['a', 'b'] && ['a', 'b'].join('+') == 'a+b'", {"name": "a-b"}, True),
    ("self.name.replace('-', '') == 'ab' && '  x '.trim() == 'x'", {"name": "a-b"}, True),
    ("self.name.find('[0-9]+') == '12' && self.name.findAll('[0-9]') == ['1', '2']", {"name": "a12"}, True),
    ("isURL(self.name) && url(self.name).getScheme() == 'https' && url(self.name).getHost() == 'x.io:8'",
     {"name": "https://x.io:8/p"}, True),
    ("'a' in self.labels && self.labels['a'] == 'b'", {"labels": {"a": "b"}}, True),
    ("self.replicas > 2 ? self.min > 0 : true", {"replicas": 3, "min": 0}, False),
    ("[1, 2] + [3] == [1, 2, 3] && string(self.replicas) == '3'", {"replicas": 3}, True),
    ("int('12') == 12 && double(1) == 1.0 && uint(1) == 1u", {}, True),
    ("self.items[3] == 1", {"items": [1]}, "index out of bounds: 3 evaluating rule: self.items[3] == 1"),
])
def test_expressions_answer_as_cel_go(rule: str, spec: Obj, want: bool | str) -> None:
    compiled = rules.compile_schema(schema({"rule": rule}), ROOT)
    assert compiled.errors == ()
    errs = rules.validate(compiled.root, {"spec": spec}, None)
    if want is True:
        assert errs == []
    else:
        detail = f"failed rule: {rule}" if want is False else want
        assert [e.message() for e in errs] == [f'spec: Invalid value: "object": {detail}']


@pytest.mark.parametrize(("validations", "extra", "expected"), [
    ([{"rule": "self.foo == 1"}], {}, [
        ("FieldValueInvalid", f"{ROOT}.properties[spec].x-kubernetes-validations[0].rule",
         f"Invalid value: {go_rule('self.foo == 1')}: compilation failed: ERROR: <input>:1:5: undefined field 'foo'"
         "\n | self.foo == 1\n | ....^")]),
    ([{"rule": "self."}], {}, [
        ("FieldValueInvalid", f"{ROOT}.properties[spec].x-kubernetes-validations[0].rule",
         f"Invalid value: {go_rule('self.')}: compilation failed: ERROR: <input>:1:6: Syntax error: no viable "
         "alternative at input '.'\n | self.\n | .....^")]),
    ([{"rule": "nope > 1"}], {}, [
        ("FieldValueInvalid", f"{ROOT}.properties[spec].x-kubernetes-validations[0].rule",
         f"Invalid value: {go_rule('nope > 1')}: compilation failed: ERROR: <input>:1:1: undeclared reference to "
         "'nope' (in container '')\n | nope > 1\n | ^")]),
    ([{"rule": "self.replicas >= 0"}],
     {"free": {"type": "array", "items": {"type": "string"},
               "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y))"}]}}, [
        ("FieldValueForbidden", f"{ROOT}.properties[spec].properties[free].x-kubernetes-validations[0].rule",
         f"Forbidden: estimated rule cost exceeds budget by factor of more than 100x {HINT}"),
        ("FieldValueForbidden", f"{ROOT}.properties[spec].properties[free].x-kubernetes-validations[0].rule",
         "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"),
        ("FieldValueForbidden", ROOT, "Forbidden: x-kubernetes-validations estimated rule cost total for entire "
         f"OpenAPIv3 schema exceeds budget by factor of more than 100x {HINT}")]),
    ([{"rule": "self.replicas == oldSelf.replicas"}],
     {"list": {"type": "array", "maxItems": 10, "items": {
         "type": "object", "properties": {"a": {"type": "string", "maxLength": 9}},
         "x-kubernetes-validations": [{"rule": "self.a == oldSelf.a"}]}}}, [
        ("FieldValueInvalid", f"{ROOT}.properties[spec].properties[list].items.x-kubernetes-validations[0].rule",
         'Invalid value: "self.a == oldSelf.a": oldSelf cannot be used on the uncorrelatable portion of the schema '
         f"within {ROOT}.properties[spec].properties[list]")]),
])
async def test_rules_are_compiled_when_the_crd_is_written(client: Client, validations: list[Obj], extra: Obj,
                                                          expected: list[tuple[str, str, str]]) -> None:
    failed = await refused(client.create(CRDS, crd_body(schema=schema(*validations, **extra))))
    assert failed.status["code"] == 422, failed.status
    assert invalid_causes(failed) == expected


RULES = [
    {"rule": "self.min <= self.replicas", "message": "replicas must be at least min"},
    {"rule": "self.replicas < 100", "messageExpression": "'replicas ' + string(self.replicas) + ' is too many'"},
    {"rule": "!has(self.name) || self.name != 'root'", "reason": "FieldValueForbidden", "fieldPath": ".name",
     "message": "root is reserved"},
    {"rule": "self.replicas != 13", "reason": "FieldValueRequired", "fieldPath": ".replicas"},
    {"rule": "!has(self.items) || self.items.size() < 3", "reason": "FieldValueDuplicate", "fieldPath": ".items"},
    {"rule": "!has(oldSelf.name) || self.name == oldSelf.name", "message": "name is immutable"},
]


def widget(name: str, spec: Obj) -> Obj:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(("spec", "expected"), [
    ({"min": 5, "replicas": 2}, [("FieldValueInvalid", "spec", 'Invalid value: "object": replicas must be at least '
                                  "min")]),
    ({"min": 0, "replicas": 200}, [("FieldValueInvalid", "spec", 'Invalid value: "object": replicas 200 is too '
                                    "many")]),
    ({"min": 0, "replicas": 1, "name": "root"}, [("FieldValueForbidden", "spec.name", "Forbidden: root is reserved")]),
    ({"min": 0, "replicas": 13}, [("FieldValueRequired", "spec.replicas",
                                   "Required value: failed rule: self.replicas != 13")]),
    ({"min": 0, "replicas": 1, "items": [1, 2, 3]}, [
        ("FieldValueDuplicate", "spec.items",
         'Duplicate value: "object": failed rule: !has(self.items) || self.items.size() < 3')]),
])
async def test_rules_run_on_create(client: Client, spec: Obj, expected: list[tuple[str, str, str]]) -> None:
    await install(client, crd_body(schema=schema(*RULES)))
    failed = await refused(client.create(WIDGETS, widget("bad", spec)))
    assert failed.status["code"] == 422, failed.status
    assert invalid_causes(failed) == expected
    assert failed.status["message"] == f'Widget.example.com "bad" is invalid: {expected[0][1]}: {expected[0][2]}'


async def test_transition_rules_run_only_on_update(client: Client) -> None:
    await install(client, crd_body(schema=schema(*RULES)))
    created = await client.create(WIDGETS, widget("w", {"min": 0, "replicas": 1, "name": "a"}))
    changed = copy.deepcopy(created)
    changed["spec"]["name"] = "b"
    failed = await refused(client.update(WIDGETS.__class__(**{**_fields(WIDGETS), "name": "w"}), changed))
    assert invalid_causes(failed) == [("FieldValueInvalid", "spec", 'Invalid value: "object": name is immutable')]
    changed["spec"]["name"] = "a"
    changed["spec"]["replicas"] = 2
    updated, _ = await client.update(WIDGETS.__class__(**{**_fields(WIDGETS), "name": "w"}), changed)
    assert updated["spec"]["replicas"] == 2


def _fields(p: Any) -> dict[str, str]:
    return {f.name: getattr(p, f.name) for f in p.DESCRIPTOR.fields}


def test_a_rule_over_a_large_value_runs_out_of_cost() -> None:
    """Accepted statically (bounded at 1000 items), refused at runtime once the value makes it too dear."""
    rule = "self.all(x, self.all(y, x <= y || x > y))"
    compiled = rules.compile_schema({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "items": {"type": "array", "maxItems": 1000, "items": {"type": "integer"},
                  "x-kubernetes-validations": [{"rule": rule}]}}}}}, ROOT)
    assert compiled.errors == ()
    assert rules.validate(compiled.root, {"spec": {"items": list(range(10))}}, None) == []
    errs = rules.validate(compiled.root, {"spec": {"items": list(range(800))}}, None)
    assert [e.message() for e in errs] == [
        "spec.items: Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no further "
        f"validation rules will be run due to call cost exceeds limit for rule: {rule}"]
