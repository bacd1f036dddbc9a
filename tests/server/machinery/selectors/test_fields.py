"""Field selectors against apimachinery's grammar, escaping and exact error messages."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.machinery.selectors.fields import (
    EVERYTHING,
    FieldSelectorError,
    Operator,
    Requirement,
    Selector,
    check_supported,
    escape_value,
    parse,
    unescape_value,
)

EQ, NE = Operator.EQUALS, Operator.NOT_EQUALS


@pytest.mark.parametrize(
    ("selector", "requirements", "canonical"),
    [
        ("", [], ""),
        (",", [], ""),
        ("x=a", [("x", EQ, "a")], "x=a"),
        ("x==a", [("x", EQ, "a")], "x=a"),
        ("x!=a", [("x", NE, "a")], "x!=a"),
        ("x=", [("x", EQ, "")], "x="),
        ("=a", [("", EQ, "a")], "=a"),
        ("x=a,y=b,z=c", [("x", EQ, "a"), ("y", EQ, "b"), ("z", EQ, "c")], "x=a,y=b,z=c"),
        ("z=c,a=x,", [("a", EQ, "x"), ("z", EQ, "c")], "a=x,z=c"),  # terms sorted as raw text
        ("a==b,a=a", [("a", EQ, "b"), ("a", EQ, "a")], "a=b,a=a"),  # "a==b" < "a=a" as text
        (
            "metadata.name=web,status.phase!=Running",
            [("metadata.name", EQ, "web"), ("status.phase", NE, "Running")],
            None,
        ),
        (" x = a ", [(" x ", EQ, " a ")], " x = a "),  # no whitespace trimming
        ("x=a||y\\=b", [("x", EQ, "a||y=b")], "x=a||y\\=b"),
        ("x=a\\=\\=b", [("x", EQ, "a==b")], "x=a\\=\\=b"),
        ("k=\\,,k2=v2", [("k2", EQ, "v2"), ("k", EQ, ",")], "k2=v2,k=\\,"),  # "k2" < "k=" as bytes
        ("k=\\\\,k2=v2", [("k2", EQ, "v2"), ("k", EQ, "\\")], "k2=v2,k=\\\\"),
        ("k=\\\\\\,,k2=v2", [("k2", EQ, "v2"), ("k", EQ, "\\,")], "k2=v2,k=\\\\\\,"),
        ("complex=\\=value\\\\\\,\\\\", [("complex", EQ, "=value\\,\\")], None),
        ("x=!a", [("x", EQ, "!a")], "x=!a"),
        ("a!b=c", [("a!b", EQ, "c")], "a!b=c"),
        ("a\\,b=c", [("a\\,b", EQ, "c")], "a\\,b=c"),  # the field is taken literally
        ("함=수,목=록", [("목", EQ, "록"), ("함", EQ, "수")], "목=록,함=수"),
        ("notin=in", [("notin", EQ, "in")], "notin=in"),
    ],
)
def test_parse(selector: str, requirements: list[tuple[str, Operator, str]], canonical: str | None) -> None:
    parsed = parse(selector)
    assert parsed.requirements == tuple(Requirement(*r) for r in requirements)
    assert str(parsed) == (selector if canonical is None else canonical)
    assert parse(str(parsed)) == parsed


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("x", "invalid selector: 'x'; can't understand 'x'"),
        ("x=a,b", "invalid selector: 'x=a,b'; can't understand 'b'"),
        ("b,x=a", "invalid selector: 'b,x=a'; can't understand 'b'"),
        ("x in (a)", "invalid selector: 'x in (a)'; can't understand 'x in (a)'"),
        ("x in (a,b,c)", "invalid selector: 'x in (a,b,c)'; can't understand 'b'"),  # terms "b", "c)", "x in (a"
        ("x!a", "invalid selector: 'x!a'; can't understand 'x!a'"),
        ("x=a||y=b", "invalid field selector: unescaped character in value: 61"),
        ("x==a==b", "invalid field selector: unescaped character in value: 61"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
        ("x===a", "invalid field selector: unescaped character in value: 61"),  # "==" and the value "=a"
        ("x!==a", "invalid field selector: unescaped character in value: 61"),
        ("x=a\\", "invalid field selector: invalid escape sequence: \\"),
        ("x=\\\\\\", "invalid field selector: invalid escape sequence: \\"),
        ("x=\\a", "invalid field selector: invalid escape sequence: \\a"),
        ("x=a\\!b", "invalid field selector: invalid escape sequence: \\!"),
        ("x=\\수", "invalid field selector: invalid escape sequence: \\수"),
        ("a\\=b=c", "invalid field selector: unescaped character in value: 61"),  # field is "a\\"
    ],
)
def test_parse_errors(selector: str, message: str) -> None:
    with pytest.raises(FieldSelectorError) as caught:
        parse(selector)
    assert caught.value.message == message
    assert caught.value.status()["message"] == message
    assert caught.value.status()["code"] == 400


@pytest.mark.parametrize(
    ("value", "escaped"),
    [("", ""), ("a", "a"), ("=", "\\="), (",", "\\,"), ("\\", "\\\\"), ("\\=\\,\\", "\\\\\\=\\\\\\,\\\\")],
)
def test_escape(value: str, escaped: str) -> None:
    assert escape_value(value) == escaped
    assert unescape_value(escaped) == value


@pytest.mark.parametrize(
    ("selector", "fields", "expected"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y", {"x": "z"}, False),
        ("x=", {}, True),  # a missing field reads as ""
        ("x!=", {}, False),
        ("x!=y", {}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("notin=in", {"notin": "in"}, True),
        ("foo=bar,baz=blah,complex=\\=value\\\\\\,\\\\", {"foo": "bar", "baz": "blah", "complex": "=value\\,\\"}, True),
        ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
    ],
)
def test_matches(selector: str, fields: dict[str, str], expected: bool) -> None:
    assert parse(selector).matches(fields) is expected


@pytest.mark.parametrize(
    ("selector", "field", "value"),
    [
        ("metadata.name=web", "metadata.name", "web"),
        ("metadata.name==web,spec.x=1", "metadata.name", "web"),
        ("metadata.name!=web", "metadata.name", None),
        ("metadata.name=", "metadata.name", ""),
        ("spec.x=1", "metadata.name", None),
        ("", "metadata.name", None),
    ],
)
def test_requires_exact_match(selector: str, field: str, value: str | None) -> None:
    assert parse(selector).requires_exact_match(field) == value


POD_FIELDS = frozenset({"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase"})


@pytest.mark.parametrize(
    ("selector", "default_conversion", "message"),
    [
        ("metadata.name=a,status.phase!=Running", False, None),
        ("spec.schedulerName=default", False, "field label not supported: spec.schedulerName"),
        ("status.qosClass=BestEffort", False, "field label not supported: status.qosClass"),
        ("z=1,spec.foo=2", False, "field label not supported: spec.foo"),  # the first in sorted order
        (
            "metadata.name=a,spec.foo=1",
            True,
            '"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"',
        ),
        ("foo.bar=baz", True, '"foo.bar" is not a known field selector: only "metadata.name", "metadata.namespace"'),
        ("", True, None),
    ],
)
def test_check_supported(selector: str, default_conversion: bool, message: str | None) -> None:
    supported = {"metadata.name", "metadata.namespace"} if default_conversion else POD_FIELDS
    parsed = parse(selector)
    if message is None:
        check_supported(parsed, supported, "pods", default_conversion=default_conversion)
        return
    with pytest.raises(FieldSelectorError) as caught:
        check_supported(parsed, supported, "pods", default_conversion=default_conversion)
    assert caught.value.message == message
    assert caught.value.kind_resource == "pods"
    assert caught.value.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
    }


def test_selector_equality_ignores_order() -> None:
    assert parse("a==x,a=b") == parse("a=x,a=b") == parse("a=b,a=x")
    assert hash(parse("a==x,a=b")) == hash(parse("a=b,a=x"))
    assert parse("a=b,a=b") != parse("a=b")
    assert parse("") == EVERYTHING and EVERYTHING.empty
    assert Selector() != parse("a=b")


# --- Properties. ---

_text = st.text(alphabet="ab=!,\\ 수", max_size=12)


@given(
    st.lists(st.tuples(st.text(alphabet="ab.수", max_size=6), st.sampled_from(["=", "==", "!="]), _text), max_size=5)
)
def test_escaped_values_round_trip(terms: list[tuple[str, str, str]]) -> None:
    parsed = parse(",".join(f"{field}{op}{escape_value(value)}" for field, op, value in terms))
    want = sorted((field, NE if op == "!=" else EQ, value) for field, op, value in terms)
    assert sorted((r.field, r.operator, r.value) for r in parsed.requirements) == want
    assert parse(str(parsed)) == parsed


@given(st.text(alphabet="ab=!,\\ 수", max_size=20))
def test_anything_that_parses_round_trips(text: str) -> None:
    try:
        parsed = parse(text)
    except FieldSelectorError as e:
        assert e.message
        return
    assert parse(str(parsed)) == parsed
