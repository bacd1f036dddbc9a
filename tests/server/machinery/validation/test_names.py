"""Name, label and annotation rules and field-error rendering, against kube-apiserver's exact text.

The expected strings are written out in full (from apimachinery's source and from real
kube-apiserver responses), never built from the module under test.
"""

from __future__ import annotations

import pytest

from server.machinery.validation import names
from server.machinery.validation.names import (
    ErrorType,
    FieldError,
    aggregate,
    go_quote,
    invalid_status,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_path_segment_name,
    is_path_segment_prefix,
    is_qualified_name,
    join_errors,
    name_is_dns1035_label,
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_annotations,
    validate_labels,
    validate_object_meta,
    validate_path_segment_name,
)

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
    "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_KEY_MSG = (
    "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
    "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
    "(e.g. 'example.com/MyName')"
)
VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        ("a", []),
        ("example.com", []),
        ("my-app.v2", []),
        ("0", []),
        ("a" * 253, []),
        ("a." * 126 + "a", []),
        ("", [SUBDOMAIN_MSG]),
        ("Foo", [SUBDOMAIN_MSG]),
        ("-a", [SUBDOMAIN_MSG]),
        ("a-", [SUBDOMAIN_MSG]),
        ("a..b", [SUBDOMAIN_MSG]),
        ("a_b", [SUBDOMAIN_MSG]),
        ("a b", [SUBDOMAIN_MSG]),
        ("a\n", [SUBDOMAIN_MSG]),  # Go's $ is the end of text, not "before a final newline"
        ("a" * 254, ["must be no more than 253 characters"]),
        ("A" * 254, ["must be no more than 253 characters", SUBDOMAIN_MSG]),
        ("é" * 127, ["must be no more than 253 characters", SUBDOMAIN_MSG]),  # 254 bytes, 127 characters
    ],
)
def test_dns1123_subdomain(value: str, errors: list[str]) -> None:
    assert is_dns1123_subdomain(value) == errors


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        ("default", []),
        ("kube-system", []),
        ("1abc", []),
        ("a" * 63, []),
        ("a" * 64, ["must be no more than 63 characters"]),
        ("a.b", ["must not contain dots"]),
        ("a" * 64 + ".b", ["must be no more than 63 characters", "must not contain dots"]),
        ("App", [LABEL_MSG]),
        ("", [LABEL_MSG]),
        ("a_b", [LABEL_MSG]),
        ("a-", [LABEL_MSG]),
        ("a..b", [LABEL_MSG]),
    ],
)
def test_dns1123_label(value: str, errors: list[str]) -> None:
    assert is_dns1123_label(value) == errors


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        ("web", []),
        ("my-svc-1", []),
        ("1abc", [DNS1035_MSG]),
        ("PingCAP-TiDB-pd", [DNS1035_MSG]),
        ("a" * 64, ["must be no more than 63 characters"]),
    ],
)
def test_dns1035_label(value: str, errors: list[str]) -> None:
    assert is_dns1035_label(value) == errors


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        ("app", []),
        ("App_1.x-y", []),
        ("example.com/MyName", []),
        ("app.kubernetes.io/name", []),
        ("a" * 63, []),
        ("a" * 253 + "/" + "b" * 63, []),
        ("app:monolith", [NAME_PART_MSG]),
        ("", ["name part must be non-empty", NAME_PART_MSG]),
        ("a/", ["name part must be non-empty", NAME_PART_MSG]),
        ("/a", ["prefix part must be non-empty"]),
        ("/", ["prefix part must be non-empty", "name part must be non-empty", NAME_PART_MSG]),
        ("a/b/c", [LABEL_KEY_MSG]),
        ("helm.sh/depends-on/resource-groups", [LABEL_KEY_MSG]),
        ("a" * 64, ["name part must be no more than 63 characters"]),
        ("-" * 64, ["name part must be no more than 63 characters", NAME_PART_MSG]),
        ("app.kubernetes_io/name", ["prefix part " + SUBDOMAIN_MSG]),
        ("Example.com/abc", ["prefix part " + SUBDOMAIN_MSG]),
        ("a" * 254 + "/b", ["prefix part must be no more than 253 characters"]),
        (
            "a_" * 127 + "/-",
            ["prefix part must be no more than 253 characters", "prefix part " + SUBDOMAIN_MSG, NAME_PART_MSG],
        ),
    ],
)
def test_qualified_name(value: str, errors: list[str]) -> None:
    assert is_qualified_name(value) == errors


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        ("", []),
        ("v1", []),
        ("my_value", []),
        ("1.2.3", []),
        ("a" * 63, []),
        ("a" * 64, ["must be no more than 63 characters"]),
        ("-" * 64, ["must be no more than 63 characters", VALUE_MSG]),
        ("ä" * 32, ["must be no more than 63 characters", VALUE_MSG]),  # 64 bytes
        ("a/b", [VALUE_MSG]),
        ("-1", [VALUE_MSG]),
        ("a.", [VALUE_MSG]),
        ("Tama-nui-te-rā", [VALUE_MSG]),
    ],
)
def test_label_value(value: str, errors: list[str]) -> None:
    assert is_label_value(value) == errors


@pytest.mark.parametrize(
    ("value", "name_errors", "prefix_errors"),
    [
        ("foo", [], []),
        ("Foo Bar:1", [], []),
        (".", ["may not be '.'"], []),
        ("..", ["may not be '..'"], []),
        ("...", [], []),
        ("a/b", ["may not contain '/'"], ["may not contain '/'"]),
        ("a%b", ["may not contain '%'"], ["may not contain '%'"]),
        ("/%", ["may not contain '/'", "may not contain '%'"], ["may not contain '/'", "may not contain '%'"]),
    ],
)
def test_path_segment(value: str, name_errors: list[str], prefix_errors: list[str]) -> None:
    assert is_path_segment_name(value) == name_errors
    assert validate_path_segment_name(value, False) == name_errors
    assert is_path_segment_prefix(value) == prefix_errors
    assert validate_path_segment_name(value, True) == prefix_errors


@pytest.mark.parametrize(
    ("generate_name", "errors"),
    [
        ("web-", []),  # masked to "wea"
        ("web", []),
        ("a-", []),  # masked to "a"
        ("a.-", []),  # upstream drops two characters: "aa" passes although "a.-xyz12" would not
        ("Web-", [SUBDOMAIN_MSG]),
        ("web--", []),  # "web" + "a"
        ("-", [SUBDOMAIN_MSG]),  # upstream panics here; reported as invalid instead
        ("a" * 254 + "-", ["must be no more than 253 characters"]),  # masked: 253 a's + "a"
        ("a" * 253 + "-", []),
    ],
)
def test_generate_name_as_dns_subdomain(generate_name: str, errors: list[str]) -> None:
    assert name_is_dns_subdomain(generate_name, True) == errors


@pytest.mark.parametrize(
    ("name", "prefix", "label", "dns1035"),
    [
        ("ns-", True, [], []),
        ("ns-", False, [LABEL_MSG], [DNS1035_MSG]),
        ("1ns", False, [], [DNS1035_MSG]),
        ("a.b-", True, ["must not contain dots"], [DNS1035_MSG]),
    ],
)
def test_name_funcs(name: str, prefix: bool, label: list[str], dns1035: list[str]) -> None:
    assert name_is_dns_label(name, prefix) == label
    assert name_is_dns1035_label(name, prefix) == dns1035


@pytest.mark.parametrize(
    ("error", "body", "cause"),
    [
        (
            FieldError.invalid("metadata.name", "Foo", "bad"),
            'Invalid value: "Foo": bad',
            {"reason": "FieldValueInvalid", "message": 'Invalid value: "Foo": bad', "field": "metadata.name"},
        ),
        (
            FieldError.required("metadata.name", "name or generateName is required"),
            "Required value: name or generateName is required",
            {
                "reason": "FieldValueRequired",
                "message": "Required value: name or generateName is required",
                "field": "metadata.name",
            },
        ),
        (
            FieldError.required("metadata.namespace"),
            "Required value",
            {"reason": "FieldValueRequired", "message": "Required value", "field": "metadata.namespace"},
        ),
        (
            FieldError.duplicate("spec.ports[1].name", "http"),
            'Duplicate value: "http"',
            {"reason": "FieldValueDuplicate", "message": 'Duplicate value: "http"', "field": "spec.ports[1].name"},
        ),
        (
            FieldError.not_supported("spec.type", "Foo", ["A", "B"]),
            'Unsupported value: "Foo": supported values: "A", "B"',
            {
                "reason": "FieldValueNotSupported",
                "message": 'Unsupported value: "Foo": supported values: "A", "B"',
                "field": "spec.type",
            },
        ),
        (
            FieldError.not_supported("x", "v", []),
            'Unsupported value: "v"',
            {"reason": "FieldValueNotSupported", "message": 'Unsupported value: "v"', "field": "x"},
        ),
        (
            FieldError.forbidden("metadata.namespace", "not allowed on this type"),
            "Forbidden: not allowed on this type",
            {
                "reason": "FieldValueForbidden",
                "message": "Forbidden: not allowed on this type",
                "field": "metadata.namespace",
            },
        ),
        (
            FieldError.too_long("metadata.annotations", 262144),
            "Too long: must have at most 262144 bytes",
            {
                "reason": "FieldValueTooLong",
                "message": "Too long: must have at most 262144 bytes",
                "field": "metadata.annotations",
            },
        ),
        (FieldError.too_long("f", 1), "Too long: must have at most 1 bytes", None),
        (FieldError.too_long_max_length("f", 5), "Too long: may not be longer than 5", None),
        (FieldError.too_long_max_length("f", -1), "Too long: value is too long", None),
        (FieldError.not_found("spec.x", "y"), 'Not found: "y"', None),
        (FieldError.invalid("spec.replicas", -1, "must be greater than or equal to 0"), None, None),
        (FieldError.invalid("values", None, "d"), "Invalid value: null: d", None),
        (FieldError.invalid("values", ["a", "b<"], "d"), 'Invalid value: []string{"a", "b<"}: d', None),
        (FieldError.invalid("x", True, "d"), "Invalid value: true: d", None),
        (FieldError.invalid("x", {"b": 1, "a": 2}, ""), 'Invalid value: {"a":2,"b":1}', None),
        (FieldError(ErrorType.TYPE_INVALID, "x", "s", "d"), 'Invalid value: "s": d', None),
        (FieldError(ErrorType.INTERNAL, "", "e", "boom"), "Internal error: boom", None),
        # Go's %#v of the types kube reports as structs and maps (checked beside kube-apiserver 1.28.7)
        (FieldError.invalid("l", names.go_string_map({"b": "2", "a": "1"}), "d"),
         'Invalid value: map[string]string{"a":"1", "b":"2"}: d', None),
        (FieldError.invalid("l", names.go_string_map(None), "d"), "Invalid value: map[string]string(nil): d", None),
        (FieldError.invalid("l", names.go_string_map({}), "d"), "Invalid value: map[string]string{}: d", None),
        (FieldError.invalid("s", names.go_label_selector(None), "d"), 'Invalid value: "null": d', None),
        (FieldError.invalid("s", names.go_label_selector({"matchLabels": {"a": "b"}}), "d"),
         'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"a":"b"}, '
         "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: d", None),
        (FieldError.invalid("s", names.go_label_selector(
            {"matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}, {"key": "j",
                                                                                    "operator": "Exists"}]}), "d"),
         "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:"
         '[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:"k", Operator:"In", '
         'Values:[]string{"x", "y"}}, v1.LabelSelectorRequirement{Key:"j", Operator:"Exists", Values:[]string(nil)}}}'
         ": d", None),
    ],
)
def test_field_error_rendering(error: FieldError, body: str | None, cause: dict[str, str] | None) -> None:
    if body is None:
        body = "Invalid value: -1: must be greater than or equal to 0"
    assert error.body() == body
    assert error.message() == f"{error.field}: {body}"
    if cause is not None:
        assert error.cause() == cause


def test_cause_omits_empty_members() -> None:
    assert FieldError(ErrorType.INTERNAL, "", "e", "boom").cause() == {
        "reason": "InternalError",
        "message": "Internal error: boom",
    }


@pytest.mark.parametrize(
    ("s", "quoted"),
    [
        ("Foo", '"Foo"'),
        ("", '""'),
        ('a"b\\c', '"a\\"b\\\\c"'),
        ("tab\there\n", '"tab\\there\\n"'),
        ("\x00\x1f\x7f", '"\\x00\\x1f\\x7f"'),
        ("héllo 世界", '"héllo 世界"'),
        ("\u00a0\u200b", '"\\u00a0\\u200b"'),
        ("\U000e0001", '"\\U000e0001"'),
        ("\ud800", '"\\xed\\xa0\\x80"'),
    ],
)
def test_go_quote(s: str, quoted: str) -> None:
    assert go_quote(s) == quoted


NAME_ERR = FieldError.invalid("metadata.name", "Foo", SUBDOMAIN_MSG)


@pytest.mark.parametrize(
    ("errors", "joined"),
    [
        ([], ""),
        ([NAME_ERR], f'metadata.name: Invalid value: "Foo": {SUBDOMAIN_MSG}'),
        ([NAME_ERR, NAME_ERR], f'metadata.name: Invalid value: "Foo": {SUBDOMAIN_MSG}'),
        (
            [FieldError.invalid("a", "x", "1"), FieldError.required("b", ""), FieldError.invalid("a", "x", "1")],
            '[a: Invalid value: "x": 1, b: Required value]',
        ),
    ],
)
def test_join_errors(errors: list[FieldError], joined: str) -> None:
    assert join_errors(errors) == joined


def test_aggregate_messages() -> None:
    assert aggregate("ConfigMap", "Foo", [NAME_ERR]) == (
        f'ConfigMap "Foo" is invalid: metadata.name: Invalid value: "Foo": {SUBDOMAIN_MSG}'
    )
    long_name = "A" * 254
    errors = [
        FieldError.invalid("metadata.name", long_name, m)
        for m in ["must be no more than 253 characters", SUBDOMAIN_MSG]
    ]
    assert aggregate("Deployment", long_name, errors, group="apps") == (
        f'Deployment.apps "{long_name}" is invalid: [metadata.name: Invalid value: "{long_name}": must be no more '
        f'than 253 characters, metadata.name: Invalid value: "{long_name}": {SUBDOMAIN_MSG}]'
    )
    assert aggregate("Pod", "", []) == 'Pod "" is invalid'


def test_invalid_status() -> None:
    status = invalid_status("ConfigMap", "Foo", [NAME_ERR])
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'ConfigMap "Foo" is invalid: metadata.name: Invalid value: "Foo": {SUBDOMAIN_MSG}',
        "reason": "Invalid",
        "details": {
            "name": "Foo",
            "kind": "ConfigMap",
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": f'Invalid value: "Foo": {SUBDOMAIN_MSG}',
                    "field": "metadata.name",
                }
            ],
        },
        "code": 422,
    }
    details = invalid_status("Deployment", "d", [], group="apps")["details"]
    assert isinstance(details, dict)
    assert list(details) == ["name", "group", "kind", "causes"]


@pytest.mark.parametrize(
    ("labels", "messages"),
    [
        ({}, []),
        ({"app": "web", "example.com/tier": ""}, []),
        ({"a b": "x"}, [f'metadata.labels: Invalid value: "a b": {NAME_PART_MSG}']),
        ({"app": "-x"}, [f'metadata.labels: Invalid value: "-x": {VALUE_MSG}']),
        (
            {"z": "a" * 64, "a/b/c": "ok"},
            [
                f'metadata.labels: Invalid value: "a/b/c": {LABEL_KEY_MSG}',
                f'metadata.labels: Invalid value: "{"a" * 64}": must be no more than 63 characters',
            ],
        ),
    ],
)
def test_validate_labels(labels: dict[str, str], messages: list[str]) -> None:
    assert [e.message() for e in validate_labels(labels, "metadata.labels")] == messages


LIMIT = 256 * 1024


@pytest.mark.parametrize(
    ("annotations", "messages"),
    [
        ({}, []),
        ({"Example.COM/Some_Key": "any value at all\n"}, []),  # keys are checked lower-cased
        ({"k": "v" * (LIMIT - 1)}, []),
        ({"k": "v" * LIMIT}, ["metadata.annotations: Too long: must have at most 262144 bytes"]),
        ({"k": "é" * (LIMIT // 2)}, ["metadata.annotations: Too long: must have at most 262144 bytes"]),
        (
            {"helm.sh/depends-on/resource-groups": "x"},
            [f'metadata.annotations: Invalid value: "helm.sh/depends-on/resource-groups": {LABEL_KEY_MSG}'],
        ),
        (
            {"A B": "", "ok": ""},
            [f'metadata.annotations: Invalid value: "A B": {NAME_PART_MSG}'],  # the original key is shown
        ),
    ],
)
def test_validate_annotations(annotations: dict[str, str], messages: list[str]) -> None:
    assert [e.message() for e in validate_annotations(annotations, "metadata.annotations")] == messages


@pytest.mark.parametrize(
    ("meta", "messages"),
    [
        ({"name": "web", "namespace": "default", "namespaced": True}, []),
        ({"name": "node-1", "namespaced": False}, []),
        (
            {"name": "", "namespace": "default", "namespaced": True},
            ["metadata.name: Required value: name or generateName is required"],
        ),
        (
            {"name": "Foo", "namespace": "default", "namespaced": True},
            [f'metadata.name: Invalid value: "Foo": {SUBDOMAIN_MSG}'],
        ),
        ({"name": "web", "namespaced": True}, ["metadata.namespace: Required value"]),
        (
            {"name": "web", "namespace": "My.NS", "namespaced": True},
            [f'metadata.namespace: Invalid value: "My.NS": {LABEL_MSG}'],
        ),
        (
            {"name": "web", "namespace": "a.b", "namespaced": True},
            ['metadata.namespace: Invalid value: "a.b": must not contain dots'],
        ),
        (
            {"name": "n", "namespace": "default", "namespaced": False},
            ["metadata.namespace: Forbidden: not allowed on this type"],
        ),
        (
            {"name": "Web-x1b2c", "generate_name": "Web-", "namespace": "d", "namespaced": True},
            [
                f'metadata.generateName: Invalid value: "Web-": {SUBDOMAIN_MSG}',
                f'metadata.name: Invalid value: "Web-x1b2c": {SUBDOMAIN_MSG}',
            ],
        ),
        (
            {"name": "web", "namespace": "d", "namespaced": True, "labels": {"a": "-"}, "annotations": {"/x": ""}},
            [
                f'metadata.labels: Invalid value: "-": {VALUE_MSG}',
                'metadata.annotations: Invalid value: "/x": prefix part must be non-empty',
            ],
        ),
    ],
)
def test_validate_object_meta(meta: dict[str, object], messages: list[str]) -> None:
    errors = validate_object_meta(name_fn=name_is_dns_subdomain, **meta)  # type: ignore[arg-type]
    assert [e.message() for e in errors] == messages


def test_object_meta_with_path_segment_names() -> None:
    # The generic pass kube-apiserver runs on every kind after the kind's own validation.
    errors = validate_object_meta(
        name="..", generate_name="a/", namespace="", namespaced=False, name_fn=validate_path_segment_name
    )
    assert [e.message() for e in errors] == [
        "metadata.generateName: Invalid value: \"a/\": may not contain '/'",
        "metadata.name: Invalid value: \"..\": may not be '..'",
    ]
