"""Label selectors against apimachinery's grammar, canonical form and exact error messages."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.machinery.selectors.labels import (
    EVERYTHING,
    NOTHING,
    Operator,
    Requirement,
    Selector,
    SelectorError,
    from_label_selector,
    parse,
    validate_label_selector,
)
from tests.server.machinery.validation.test_names import LABEL_KEY_MSG, NAME_PART_MSG, SUBDOMAIN_MSG, VALUE_MSG

UNABLE = "unable to parse requirement: "
BINARY_OPS = "in, notin, =, ==, !=, gt, lt"


@pytest.mark.parametrize(
    ("selector", "canonical"),
    [
        ("", ""),
        ("   ", ""),
        ("x", "x"),
        ("!x", "!x"),
        ("x=a", "x=a"),
        ("x==a", "x==a"),
        ("x!=a", "x!=a"),
        ("x=", "x="),
        ("x= ", "x="),
        ("x=,z= ", "x=,z="),
        ("x>1", "x>1"),
        ("x>1,z<5", "x>1,z<5"),
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("z=c,x=a,a=x", "a=x,x=a,z=c"),  # sorted by key
        ("x=a,x!=b", "x=a,x!=b"),  # equal keys keep their order
        ("\rx", "x"),
        (" x\t,\n!y ", "x,!y"),
        ("x in (b,a)", "x in (a,b)"),
        ("x in (a,a,b)", "x in (a,b)"),
        ("x notin (abc)", "x notin (abc)"),
        ("x in ()", "x in ()"),
        ("x in (abc,)", "x in (,abc)"),
        ("x in (,abc)", "x in (,abc)"),
        ("x in (a,,b)", "x in (,a,b)"),
        ("x in (,)", "x in ()"),
        ("x notin (abc,def),bar,z in (),w", "bar,w,x notin (abc,def),z in ()"),
        ("foo  in\t (abc)", "foo in (abc)"),
        ("x notin\n (abc)", "x notin (abc)"),
        ("this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"),
        ("0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)", "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)"),
        ("in in (in)", "in in (in)"),  # "in" is a word wherever a key or value is expected
        ("notin=in", "notin=in"),
        ("!notin", "!notin"),
        ("x in (in,notin)", "x in (in,notin)"),
        ("x=a \x00,garbage(((", "x=a"),  # where a token could start, Go's lexer reads a 0 byte as the end
        ("\x00x=a", ""),
    ],
)
def test_parse(selector: str, canonical: str) -> None:
    parsed = parse(selector)
    assert str(parsed) == canonical
    assert parse(canonical) == parsed


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("x=a b", "found 'b', expected: ',' or 'end of string'"),
        ("x=a)", "found ')', expected: ',' or 'end of string'"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("(x)", "found '(', expected: !, identifier, or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        ("a,,b", "found ',', expected: identifier after ','"),
        ("a,=b", "found '=', expected: identifier after ','"),
        ("!", UNABLE + "found '', expected: identifier"),
        ("!!x", UNABLE + "found '!', expected: identifier"),
        ("!=x", "found '!=', expected: !, identifier, or 'end of string'"),
        ("x=(", UNABLE + "found '(', expected: identifier"),
        ("x===", UNABLE + "found '=', expected: identifier"),
        ("x a", UNABLE + f"found 'a', expected: {BINARY_OPS}"),
        ("x (a)", UNABLE + f"found '(', expected: {BINARY_OPS}"),
        ("a\x00b", UNABLE + f"found 'b', expected: {BINARY_OPS}"),  # a 0 byte ending a token is dropped
        ("x=a\x00,y(", UNABLE + f"found '(', expected: {BINARY_OPS}"),
        ("a in x", UNABLE + "found 'x' expected: '('"),
        ("a in", UNABLE + "found '' expected: '('"),
        ("a notin )", UNABLE + "found ')' expected: '('"),
        ("x in (=)", UNABLE + "found '=', expected: ',', ')' or identifier"),
        ("x in (", UNABLE + "found '', expected: ',', ')' or identifier"),
        ("x in (a b)", UNABLE + "found 'b', expected: ',' or ')'"),
        ("x in (a", UNABLE + "found '', expected: ',' or ')'"),
        ("x in (a,", UNABLE + "found '', expected: ',', or identifier"),
        ("x in (a,=", UNABLE + "found '=', expected: ',', or identifier"),
        ("x in (a,(b)", UNABLE + "found '(', expected: ',', or identifier"),
        ("x in (,,)", UNABLE + "found ')', expected: ',', or identifier"),  # upstream quirk: (,) is fine
        ("x in (a,,)", UNABLE + "found ')', expected: ',', or identifier"),
        ("app:monolith", UNABLE + f'<nil>: Invalid value: "app:monolith": {NAME_PART_MSG}'),
        ("*bar=x", UNABLE + f'<nil>: Invalid value: "*bar": {NAME_PART_MSG}'),
        ("a/b/c ?=? def", UNABLE + f'<nil>: Invalid value: "a/b/c": {LABEL_KEY_MSG}'),
        (
            "app.kubernetes_io/name=vault",
            UNABLE + f'<nil>: Invalid value: "app.kubernetes_io/name": prefix part {SUBDOMAIN_MSG}',
        ),
        ("/a", UNABLE + '<nil>: Invalid value: "/a": prefix part must be non-empty'),
        ("a/", UNABLE + f'<nil>: Invalid value: "a/": name part must be non-empty; {NAME_PART_MSG}'),
        ("a" * 64, UNABLE + f'<nil>: Invalid value: "{"a" * 64}": name part must be no more than 63 characters'),
        ("!-a", UNABLE + f'<nil>: Invalid value: "-a": {NAME_PART_MSG}'),
        ("x=a@b", UNABLE + f'values[0][x]: Invalid value: "a@b": {VALUE_MSG}'),
        ("x=" + "a" * 64, UNABLE + f'values[0][x]: Invalid value: "{"a" * 64}": must be no more than 63 characters'),
        (
            "x=" + "-" * 64,
            UNABLE + f'values[0][x]: Invalid value: "{"-" * 64}": must be no more than 63 characters; {VALUE_MSG}',
        ),
        ("x in (ok,b@)", UNABLE + f'values[0][x]: Invalid value: "b@": {VALUE_MSG}'),  # b@ sorts first
        (
            "x in (a@,b@)",
            UNABLE
            + f'[values[0][x]: Invalid value: "a@": {VALUE_MSG}, values[1][x]: Invalid value: "b@": {VALUE_MSG}]',
        ),
        ("x<a", UNABLE + "values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"),
        ("x>1.5", UNABLE + "values[0]: Invalid value: \"1.5\": for 'Gt', 'Lt' operators, the value must be an integer"),
        ("x>", UNABLE + "values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer"),
        (
            "x>99999999999999999999",
            UNABLE + 'values[0]: Invalid value: "99999999999999999999": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        ("x>-1", UNABLE + f'values[0][x]: Invalid value: "-1": {VALUE_MSG}'),
        (
            "x<a@",
            UNABLE
            + "[values[0]: Invalid value: \"a@\": for 'Gt', 'Lt' operators, the value must be an integer, "
            + f'values[0][x]: Invalid value: "a@": {VALUE_MSG}]',
        ),
    ],
)
def test_parse_errors(selector: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        parse(selector)
    assert caught.value.message == message
    assert str(caught.value) == message


def test_bad_request_status() -> None:
    with pytest.raises(SelectorError) as caught:
        parse("a in x")
    assert caught.value.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "unable to parse requirement: found 'x' expected: '('",
        "reason": "BadRequest",
        "code": 400,
    }


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {"x": "y"}, True),
        ("", {}, True),
        ("x=y", {"x": "y"}, True),
        ("x==y", {"x": "y"}, True),
        ("x=y", {"x": "z"}, False),
        ("x=z", {}, False),
        ("x=", {"x": ""}, True),
        ("x=", {}, False),
        ("x!=y", {"x": "z"}, True),
        ("x!=y", {}, True),
        ("x!=y", {"x": "y"}, False),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("notin=in", {"notin": "in"}, True),
        ("x", {"x": ""}, True),
        ("x", {"y": "z"}, False),
        ("!x", {"y": "z"}, True),
        ("!x", {"x": ""}, False),
        ("x in (a,b)", {"x": "b"}, True),
        ("x in (a,b)", {"x": "c"}, False),
        ("x in (a,b)", {}, False),
        ("x in ()", {"x": ""}, True),
        ("x in ()", {"y": "baz"}, False),
        ("x notin (a,b)", {"x": "c"}, True),
        ("x notin (a,b)", {}, True),
        ("x notin (a,b)", {"x": "a"}, False),
        ("x notin (),y", {"y": ""}, True),
        ("x notin (),!y", {"y": ""}, False),
        ("x>1", {"x": "2"}, True),
        ("x>1", {"x": "1"}, False),
        ("x>1", {"x": "0"}, False),
        ("x<1", {"x": "0"}, True),
        ("x<1", {"x": "-5"}, True),
        ("x<1", {"x": "2"}, False),
        ("x>1", {"x": "v2"}, False),
        ("x>1", {"x": " 2"}, False),
        ("x>1", {"x": "+2"}, True),
        ("x>1", {}, False),
        ("x>0", {"x": "9223372036854775808"}, False),  # beyond int64: not a number to Go
        ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
    ],
)
def test_matches(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert parse(selector).matches(labels) is expected


@pytest.mark.parametrize(
    ("selector", "key", "value"),
    [
        ("x=a", "x", "a"),
        ("x==a,y", "x", "a"),
        ("x in (a)", "x", "a"),
        ("x in (a,b)", "x", None),
        ("x!=a", "x", None),
        ("x", "x", None),
        ("y=a", "x", None),
        ("", "x", None),
    ],
)
def test_requires_exact_match(selector: str, key: str, value: str | None) -> None:
    assert parse(selector).requires_exact_match(key) == value


def test_everything_and_nothing() -> None:
    assert parse("") == EVERYTHING
    assert EVERYTHING.empty and EVERYTHING.matches({"a": "b"})
    assert not NOTHING.empty and not NOTHING.matches({}) and str(NOTHING) == ""


@pytest.mark.parametrize(
    ("selector", "canonical"),
    [
        ({}, ""),
        ({"matchLabels": {}, "matchExpressions": []}, ""),
        ({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2"),
        ({"matchLabels": {"app": ""}}, "app="),
        (
            {
                "matchLabels": {"tier": "web"},
                "matchExpressions": [
                    {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                    {"key": "zone", "operator": "NotIn", "values": ["b", "a", "b"]},
                    {"key": "canary", "operator": "DoesNotExist"},
                    {"key": "app", "operator": "Exists", "values": []},
                ],
            },
            "app,!canary,env in (dev,prod),tier=web,zone notin (a,b,b)",
        ),
    ],
)
def test_from_label_selector(selector: dict[str, object], canonical: str) -> None:
    assert str(from_label_selector(selector)) == canonical


def test_from_label_selector_matches_like_the_parsed_string() -> None:
    converted = from_label_selector(
        {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]}
    )
    assert converted == parse("app=web,env notin (dev)")
    assert converted.matches({"app": "web"}) and not converted.matches({"app": "web", "env": "dev"})
    assert from_label_selector(None) == NOTHING
    assert from_label_selector({}) == EVERYTHING


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ({"matchLabels": {"a b": "x"}}, f'key: Invalid value: "a b": {NAME_PART_MSG}'),
        ({"matchLabels": {"k": "x y"}}, f'values[0][k]: Invalid value: "x y": {VALUE_MSG}'),
        (
            {"matchLabels": {"a b": "x y"}},
            f'[key: Invalid value: "a b": {NAME_PART_MSG}, values[0][a b]: Invalid value: "x y": {VALUE_MSG}]',
        ),
        (
            {"matchLabels": {"ok": "-", "a/b/c": "v"}},  # keys are taken in sorted order
            f'key: Invalid value: "a/b/c": {LABEL_KEY_MSG}',
        ),
        (
            {"matchExpressions": [{"key": "k", "operator": "Seriously"}]},
            '"Seriously" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [{"key": "k", "operator": "in", "values": ["a"]}]},
            '"in" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1"]}]},
            '"Gt" is not a valid label selector operator',
        ),
        ({"matchExpressions": [{"key": "k"}]}, '"" is not a valid label selector operator'),
        (
            {"matchExpressions": [{"key": "name", "operator": "In", "values": []}]},
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "name", "operator": "NotIn"}]},
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["a", "b"]}]},
            'values: Invalid value: []string{"a", "b"}: values set must be empty for exists and does not exist',
        ),
        (
            {"matchExpressions": [{"key": "k", "operator": "DoesNotExist", "values": ["a@"]}]},
            '[values: Invalid value: []string{"a@"}: values set must be empty for exists and does not exist, '
            f'values[0][k]: Invalid value: "a@": {VALUE_MSG}]',
        ),
        (
            {"matchExpressions": [{"key": "k", "operator": "In", "values": ["z", "b@"]}]},  # given order, not sorted
            f'values[1][k]: Invalid value: "b@": {VALUE_MSG}',
        ),
    ],
)
def test_from_label_selector_errors(selector: dict[str, object], message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        from_label_selector(selector)
    assert caught.value.message == message


@pytest.mark.parametrize(
    ("selector", "messages"),
    [
        (None, []),
        ({}, []),
        ({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "a", "operator": "In", "values": ["x"]}]}, []),
        ({"matchLabels": {"a b": "x"}}, [f'spec.selector.matchLabels: Invalid value: "a b": {NAME_PART_MSG}']),
        ({"matchLabels": {"a": "x y"}}, [f'spec.selector.matchLabels: Invalid value: "x y": {VALUE_MSG}']),
        (
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            [
                "spec.selector.matchExpressions[0].values: Required value: "
                "must be specified when `operator` is 'In' or 'NotIn'"
            ],
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            [
                "spec.selector.matchExpressions[0].values: Forbidden: "
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            ],
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]},
            ['spec.selector.matchExpressions[0].operator: Invalid value: "Equals": not a valid selector operator'],
        ),
        (
            {"matchExpressions": [{"key": "", "operator": "NotIn", "values": ["ok", "-"]}]},
            [
                'spec.selector.matchExpressions[0].key: Invalid value: "": name part must be non-empty',
                f'spec.selector.matchExpressions[0].key: Invalid value: "": {NAME_PART_MSG}',
                f'spec.selector.matchExpressions[0].values[1]: Invalid value: "-": {VALUE_MSG}',
            ],
        ),
    ],
)
def test_validate_label_selector(selector: dict[str, object] | None, messages: list[str]) -> None:
    assert [e.message() for e in validate_label_selector(selector, "spec.selector")] == messages


def test_requirement_value_object() -> None:
    req = Requirement("x", Operator.IN, ("a", "b"))
    assert str(req) == "x in (a,b)"
    assert parse("x in (b,a)") == Selector((req,))
    assert hash(parse("x in (b,a)")) == hash(Selector((req,)))


# --- Properties: the canonical form re-parses to the same selector. ---

_ALNUM = "aZ09"


@st.composite
def _names(draw: st.DrawFn) -> str:
    """A valid label value when non-empty: alphanumeric ends, '-', '_' or '.' inside."""
    ends = draw(st.text(alphabet=_ALNUM, min_size=1, max_size=2))
    return ends if len(ends) == 1 else ends[0] + draw(st.text(alphabet="-_.a9", max_size=4)) + ends[1]


_prefixes = st.sampled_from(["", "example.com/", "a/", "k8s.io/", "0.1-2/"])
_keys: st.SearchStrategy[str] = st.builds(lambda p, n: p + n, _prefixes, _names())
_values = st.one_of(st.just(""), _names(), st.sampled_from(["in", "notin"]))
_space = st.sampled_from(["", " ", "\t", "  \n"])


@st.composite
def _requirements(draw: st.DrawFn) -> str:
    key, sp = draw(_keys), draw(_space)
    kind = draw(st.sampled_from(["exists", "not", "=", "==", "!=", "in", "notin", ">", "<"]))
    if kind == "exists":
        return key
    if kind == "not":
        return f"!{sp}{key}"
    if kind in ("in", "notin"):
        # Non-empty values: empty places in a list are table-tested, since "(a,,)" is an error upstream.
        vals = draw(st.lists(_values.filter(bool), max_size=4))
        return f"{key} {kind}{sp}({sp}{(sp + ',' + sp).join(vals)}{sp})"
    if kind in (">", "<"):
        return f"{key}{sp}{kind}{sp}{draw(st.integers(0, 10**6))}"
    return f"{key}{sp}{kind}{sp}{draw(_values)}"


@given(st.lists(_requirements(), max_size=5), _space)
def test_canonical_form_round_trips(reqs: list[str], sp: str) -> None:
    parsed = parse(f"{sp},{sp}".join(reqs))
    assert parse(str(parsed)) == parsed
    assert str(parse(str(parsed))) == str(parsed)


@given(st.text(alphabet="ab!=<>(), \t\x00in/.-_1", max_size=30))
def test_anything_that_parses_round_trips(text: str) -> None:
    try:
        parsed = parse(text)
    except SelectorError as e:
        assert e.message  # rejected with a message, never another exception
        return
    assert parse(str(parsed)) == parsed
