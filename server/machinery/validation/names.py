"""Object names, label keys and values, annotations, and the field errors that report them.

kube-apiserver answers a bad object with an `Invalid` Status whose message and causes
clients show verbatim, e.g.

    ConfigMap "Foo" is invalid: metadata.name: Invalid value: "Foo": a lowercase RFC 1123
    subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start
    and end with an alphanumeric character (e.g. 'example.com', regex used for validation is
    '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')

so every rule here returns apimachinery's exact strings (k8s.io/apimachinery
pkg/util/validation, pkg/api/validate/content, pkg/api/validation, pkg/apis/meta/v1/validation
and pkg/util/validation/field). Two wordings differ by origin, as upstream: label keys and
values (the `content` package) say "must be no more than 63 characters", object names (the
older `util/validation` functions) say "must be no more than 253 characters".

Lengths are UTF-8 byte counts, as Go's `len` is. Where Go iterates a map (labels,
annotations) the order of errors is random upstream; here it is sorted by key.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum


class ErrorType(StrEnum):
    """field.ErrorType: the `reason` of a Status cause."""

    NOT_FOUND = "FieldValueNotFound"
    REQUIRED = "FieldValueRequired"
    DUPLICATE = "FieldValueDuplicate"
    INVALID = "FieldValueInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    INTERNAL = "InternalError"
    TYPE_INVALID = "FieldValueTypeInvalid"


_TYPE_TEXT = {
    ErrorType.NOT_FOUND: "Not found",
    ErrorType.REQUIRED: "Required value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.INTERNAL: "Internal error",
    ErrorType.TYPE_INVALID: "Invalid value",
}
# Types whose message never shows the bad value (field.Error.ErrorBody).
_VALUE_HIDDEN = frozenset({ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL})


@dataclass(frozen=True, slots=True)
class FieldError:
    """One field.Error. `field` is the rendered path ("metadata.name", "values[0][app]", "<nil>")."""

    type: ErrorType
    field: str
    value: object
    detail: str

    @classmethod
    def invalid(cls, field: str, value: object, detail: str) -> FieldError:
        return cls(ErrorType.INVALID, field, value, detail)

    @classmethod
    def required(cls, field: str, detail: str = "") -> FieldError:
        return cls(ErrorType.REQUIRED, field, "", detail)

    @classmethod
    def duplicate(cls, field: str, value: object) -> FieldError:
        return cls(ErrorType.DUPLICATE, field, value, "")

    @classmethod
    def not_found(cls, field: str, value: object) -> FieldError:
        return cls(ErrorType.NOT_FOUND, field, value, "")

    @classmethod
    def not_supported(cls, field: str, value: object, supported: Sequence[str]) -> FieldError:
        detail = "supported values: " + ", ".join(go_quote(s) for s in supported) if supported else ""
        return cls(ErrorType.NOT_SUPPORTED, field, value, detail)

    @classmethod
    def forbidden(cls, field: str, detail: str) -> FieldError:
        return cls(ErrorType.FORBIDDEN, field, "", detail)

    @classmethod
    def too_long(cls, field: str, max_length: int) -> FieldError:
        """field.TooLong: the value is never shown, only the limit in bytes."""
        return cls(ErrorType.TOO_LONG, field, "<value omitted>", f"must have at most {max_length} bytes")

    @classmethod
    def too_long_max_length(cls, field: str, max_length: int) -> FieldError:
        """field.TooLongMaxLength (a custom resource's maxLength): the limit without a unit."""
        detail = f"may not be longer than {max_length}" if max_length >= 0 else "value is too long"
        return cls(ErrorType.TOO_LONG, field, "<value omitted>", detail)

    def body(self) -> str:
        """field.Error.ErrorBody: the message without the field, also a Status cause's `message`."""
        text = _TYPE_TEXT[self.type]
        if self.type not in _VALUE_HIDDEN and self.value is not OMIT_VALUE:
            text = f"{text}: {_render_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def message(self) -> str:
        """field.Error.Error(): `metadata.name: Invalid value: "Foo": <detail>`."""
        return f"{self.field}: {self.body()}"

    def cause(self) -> dict[str, str]:
        """The metav1.StatusCause this error becomes in an Invalid Status (empty members omitted)."""
        cause = {"reason": str(self.type), "message": self.body(), "field": self.field}
        return {k: v for k, v in cause.items() if v}


def join_errors(errors: Iterable[FieldError]) -> str:
    """ErrorList.ToAggregate().Error(): one message alone, several as `[a, b]`, repeats dropped."""
    messages = list(dict.fromkeys(e.message() for e in errors))
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]" if messages else ""


def aggregate(kind: str, name: str, errors: Sequence[FieldError], *, group: str = "") -> str:
    """errors.NewInvalid's message: `ConfigMap "Foo" is invalid: <joined errors>`."""
    qualified = f"{kind}.{group}" if group else kind
    prefix = f"{qualified} {go_quote(name)} is invalid"
    return f"{prefix}: {join_errors(errors)}" if errors else prefix


def invalid_status(kind: str, name: str, errors: Sequence[FieldError], *, group: str = "") -> dict[str, object]:
    """The whole 422 Status errors.NewInvalid produces, in its JSON member order."""
    details: dict[str, object] = {"name": name, "group": group, "kind": kind}
    details = {k: v for k, v in details.items() if v}
    details["causes"] = [e.cause() for e in errors]
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": aggregate(kind, name, errors, group=group),
        "reason": "Invalid",
        "details": details,
        "code": 422,
    }


def go_quote(s: str) -> str:
    """Go's strconv.Quote (`%q`), which kube-apiserver uses for names and string values."""
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0xD800 <= code <= 0xDFFF:  # not UTF-8: Go shows the bytes of an invalid sequence
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
        elif ch.isprintable():  # same categories as Go's unicode.IsPrint: L, M, N, P, S and ' '
            out.append(ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
_JSON_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


@dataclass(frozen=True, slots=True)
class GoValue:
    """A bad value already printed as Go prints it (%#v of a slice or struct), e.g. `[]string{"10.0.0.1"}`."""

    text: str


# field.OmitValueType{}: an error that shows no value ("Invalid value: <detail>").
OMIT_VALUE = GoValue("")


def go_string_map(value: object) -> GoValue:
    """%#v of a map[string]string as ErrorBody prints it: keys sorted, as fmt prints maps; an absent map is nil."""
    if not isinstance(value, dict):
        return GoValue("map[string]string(nil)")
    body = ", ".join(f"{go_quote(str(k))}:{go_quote(str(value[k]))}" for k in sorted(value))
    return GoValue(f"map[string]string{{{body}}}")


def go_string_slice(value: object) -> GoValue:
    """%#v of a []string as ErrorBody prints it; an absent slice is nil."""
    if not isinstance(value, list | tuple):
        return GoValue("[]string(nil)")
    return GoValue("[]string{" + ", ".join(go_quote(str(item)) for item in value) + "}")


def go_bytes(value: bytes) -> GoValue:
    """%#v of a []byte as ErrorBody prints it: each byte in hex, `[]byte{0x61, 0xa}`."""
    return GoValue("[]byte{" + ", ".join(f"0x{byte:x}" for byte in value) + "}")


def go_int_or_string(value: object) -> GoValue:
    """%#v of an intstr.IntOrString as ErrorBody prints it (its String has a pointer receiver): an absent one is
    the integer 0."""
    if isinstance(value, str):
        return GoValue(f'intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_quote(value)}}}')
    number = value if isinstance(value, int) and not isinstance(value, bool) else 0
    return GoValue(f'intstr.IntOrString{{Type:0, IntVal:{number}, StrVal:""}}')


def go_label_selector(value: object) -> GoValue | str:
    """%#v of a *metav1.LabelSelector as ErrorBody prints it: the struct behind the pointer, with Go's nil and
    empty maps and slices; "null" for a nil pointer."""
    if not isinstance(value, dict):
        return "null"
    labels = go_string_map(value.get("matchLabels")).text
    expressions = value.get("matchExpressions")
    kind = "v1.LabelSelectorRequirement"
    if not isinstance(expressions, list):
        listed = f"[]{kind}(nil)"
    else:
        items = []
        for e in expressions:
            e = e if isinstance(e, dict) else {}
            values = e.get("values")
            shown = ("[]string(nil)" if not isinstance(values, list)
                     else "[]string{" + ", ".join(go_quote(str(v)) for v in values) + "}")
            items.append(f"{kind}{{Key:{go_quote(str(e.get('key') or ''))}, "
                         f"Operator:{go_quote(str(e.get('operator') or ''))}, Values:{shown}}}")
        listed = f"[]{kind}{{{', '.join(items)}}}"
    return GoValue(f"v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{listed}}}")


def _render_value(value: object) -> str:
    """How ErrorBody prints a bad value: %q for strings, %v for numbers and bools, %#v of a []string for a
    list of strings (`[]string{"a", "b"}`), else Go's JSON."""
    if isinstance(value, GoValue):
        return value.text
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list | tuple) and value and all(isinstance(item, str) for item in value):
        return go_string_slice(value).text
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    # encoding/json escapes these even inside strings; they only ever occur inside strings.
    return "".join(_JSON_HTML_ESCAPES.get(c, c) for c in text)


# --- The rules. ---

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
LABEL_VALUE_MAX_LENGTH = 63
QUALIFIED_NAME_MAX_LENGTH = 63
TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * (1 << 10)

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"

_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_RE = re.compile(_DNS1035_LABEL_FMT)
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """validation.RegexError; note the two spaces before each " or " (upstream's format)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


# Matched whole (fullmatch): Go's `$` is the end of the text, where Python's also matches before a final newline.
CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
CONFIG_KEY_ERROR = regex_error(
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
    "[-._a-zA-Z0-9]+", "key.name", "KEY_NAME", "key-name",
)


@functools.lru_cache(maxsize=8192)
def is_config_map_key(key: str) -> tuple[str, ...]:
    """IsConfigMapKey, in its order (a ConfigMap's or Secret's keys, a key selector's key); keys repeat across
    objects, so verdicts are remembered."""
    problems = ["must be no more than 253 characters"] if len(key) > 253 else []
    if not CONFIG_KEY.fullmatch(key):
        problems.append(CONFIG_KEY_ERROR)
    if key == ".":
        problems.append("must not be '.'")
    elif key == "..":
        problems.append("must not be '..'")
    elif key.startswith(".."):
        problems.append("must not start with '..'")
    return tuple(problems)


def _max_len_characters(length: int) -> str:  # util/validation.MaxLenError
    return f"must be no more than {length} characters"


def byte_len(s: str) -> int:
    """Go's len(s): the UTF-8 byte count."""
    return len(s.encode("utf-8", "surrogatepass"))


def is_dns1123_label(value: str) -> list[str]:
    """IsDNS1123Label: namespace names and other 63-byte names."""
    errs = []
    if byte_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(_max_len_characters(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")  # a valid subdomain, so the dots are the problem
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def _dns1123_subdomain(value: str, max_len_error: Callable[[int], str]) -> list[str]:
    errs = []
    if byte_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """IsDNS1123Subdomain: the names of most kinds."""
    return _dns1123_subdomain(value, _max_len_characters)


def is_dns1035_label(value: str) -> list[str]:
    """IsDNS1035Label: Service names."""
    errs = []
    if byte_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(_max_len_characters(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """IsQualifiedName: label keys, annotation keys, finalizers (1.28's words: a length is in "characters", though
    Go counts bytes)."""
    errs = []
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a qualified name "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in _dns1123_subdomain(prefix, _max_len_characters))
    if not name:
        errs.append("name part must be non-empty")
    elif byte_len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + _max_len_characters(QUALIFIED_NAME_MAX_LENGTH))
    if not _LABEL_KEY_RE.fullmatch(name):
        errs.append("name part " + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_label_value(value: str) -> list[str]:
    """IsValidLabelValue."""
    errs = []
    if byte_len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(_max_len_characters(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_path_segment_prefix(value: str) -> list[str]:
    """IsValidPathSegmentPrefix: no '/' or '%' (empty and long names are not this rule's concern)."""
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in value]


def is_path_segment_name(value: str) -> list[str]:
    """IsValidPathSegmentName: what every name must be to sit in a URL path segment."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return is_path_segment_prefix(value)


# A ValidateNameFunc: (name, prefix) -> messages. `prefix` is True for a generateName,
# which will have random characters appended.
NameFunc = Callable[[str, bool], list[str]]


def _mask_trailing_dash(name: str) -> str:
    """maskTrailingDash, quirk included: "abc-" becomes "aba" (the last *two* characters go).

    Upstream slices bytes, and panics on a lone "-"; a lone "-" is left as is here,
    so it is reported as an invalid name instead.
    """
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool) -> list[str]:
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def validate_path_segment_name(name: str, prefix: bool) -> list[str]:
    """path.ValidatePathSegmentName: the generic check kube-apiserver runs on every created object."""
    return is_path_segment_prefix(name) if prefix else is_path_segment_name(name)


validate_namespace_name: NameFunc = name_is_dns_label


# Label and annotation keys and values repeat across objects: remember their verdicts (the checks are pure).
@functools.lru_cache(maxsize=8192)
def _qualified_name_problems(value: str) -> tuple[str, ...]:
    return tuple(is_qualified_name(value))


@functools.lru_cache(maxsize=8192)
def _label_value_problems(value: str) -> tuple[str, ...]:
    return tuple(is_label_value(value))


def validate_label_name(key: str, path: str) -> list[FieldError]:
    """ValidateLabelName: one Invalid per problem with the key."""
    return [FieldError.invalid(path, key, m) for m in _qualified_name_problems(key)]


def validate_labels(labels: Mapping[str, str], path: str) -> list[FieldError]:
    """ValidateLabels: each key, then its value, both reported at `path` itself."""
    errs: list[FieldError] = []
    for key in sorted(labels):
        errs.extend(validate_label_name(key, path))
        errs.extend(FieldError.invalid(path, labels[key], m) for m in _label_value_problems(labels[key]))
    return errs


def validate_annotations(annotations: Mapping[str, str], path: str) -> list[FieldError]:
    """ValidateAnnotations: keys are qualified names ignoring case; keys plus values at most 256 KiB."""
    errs = [
        FieldError.invalid(path, key, m) for key in sorted(annotations) for m in _qualified_name_problems(key.lower())
    ]
    if sum(byte_len(k) + byte_len(v) for k, v in annotations.items()) > TOTAL_ANNOTATION_SIZE_LIMIT_B:
        errs.append(FieldError.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_B))
    return errs


def validate_object_meta(
    *,
    name: str,
    generate_name: str = "",
    namespace: str = "",
    namespaced: bool,
    name_fn: NameFunc,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    generation: object = 0,
    owner_references: object = None,
    finalizers: object = None,
    standard_finalizers: bool = False,
    path: str = "metadata",
) -> list[FieldError]:
    """ValidateObjectMetaAccessor's checks of names, namespace, generation, labels, annotations, ownerReferences
    and finalizers, in its order (managedFields are the field manager's: it resets ones it cannot read).

    As in kube-apiserver, the name must already have been generated from generateName:
    an empty name is `Required value: name or generateName is required`. generateName
    itself is checked by `name_fn` with prefix=True.
    """
    errs: list[FieldError] = []
    if generate_name:
        errs.extend(FieldError.invalid(f"{path}.generateName", generate_name, m) for m in name_fn(generate_name, True))
    if not name:
        errs.append(FieldError.required(f"{path}.name", "name or generateName is required"))
    else:
        errs.extend(FieldError.invalid(f"{path}.name", name, m) for m in name_fn(name, False))
    if namespaced:
        if not namespace:
            errs.append(FieldError.required(f"{path}.namespace"))
        else:
            errs.extend(
                FieldError.invalid(f"{path}.namespace", namespace, m) for m in validate_namespace_name(namespace, False)
            )
    elif namespace:
        errs.append(FieldError.forbidden(f"{path}.namespace", "not allowed on this type"))
    if isinstance(generation, int) and generation < 0:
        errs.append(FieldError.invalid(f"{path}.generation", generation, "must be greater than or equal to 0"))
    if labels:
        errs.extend(validate_labels(labels, f"{path}.labels"))
    if annotations:
        errs.extend(validate_annotations(annotations, f"{path}.annotations"))
    if isinstance(owner_references, list) and owner_references:
        errs.extend(validate_owner_references(owner_references, f"{path}.ownerReferences"))
    if isinstance(finalizers, list) and finalizers:
        errs.extend(validate_finalizers(finalizers, f"{path}.finalizers"))
        if standard_finalizers:  # core's ValidateObjectMeta, after apimachinery's
            errs.extend(FieldError.invalid(f"{path}.finalizers[{i}]", str(f), "name is neither a standard finalizer "
                                           "name nor is it fully qualified")
                        for i, f in enumerate(finalizers) if "/" not in str(f) and f not in STANDARD_FINALIZERS)
    return errs


STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


# The owners kube refuses (BannedOwners), by group, version and kind.
_BANNED_OWNERS = frozenset({("", "v1", "Event")})
# A set Go pointer as %#v prints it: an address, which differs from kube's (and from run to run there).
GO_POINTER = "0xc000000000"


def validate_owner_references(refs: list[object], path: str) -> list[FieldError]:
    """ValidateOwnerReferences: each reference's apiVersion (a version), kind, name and uid, no banned owner, and
    at most one controller. The children's paths carry no index, as kube's."""
    errs: list[FieldError] = []
    first_controller = ""
    for ref in refs:
        r = ref if isinstance(ref, dict) else {}
        api_version, kind = str(r.get("apiVersion") or ""), str(r.get("kind") or "")
        group, _, version = api_version.rpartition("/") if "/" in api_version else ("", "", api_version)
        if not version:
            errs.append(FieldError.invalid(f"{path}.apiVersion", api_version, "version must not be empty"))
        if not kind:
            errs.append(FieldError.invalid(f"{path}.kind", kind, "kind must not be empty"))
        if not r.get("name"):
            errs.append(FieldError.invalid(f"{path}.name", str(r.get("name") or ""), "name must not be empty"))
        if not r.get("uid"):
            errs.append(FieldError.invalid(f"{path}.uid", str(r.get("uid") or ""), "uid must not be empty"))
        if (group, version, kind) in _BANNED_OWNERS:
            errs.append(FieldError.invalid(path, GoValue(_go_owner_reference(r)),
                                           f"{group}/{version}, Kind={kind} is disallowed from being an owner"))
        if r.get("controller") is True:
            current = f"{kind}/{r.get('name') or ''}"
            if first_controller:
                shown = "[]v1.OwnerReference{" + ", ".join(
                    _go_owner_reference(x if isinstance(x, dict) else {}) for x in refs) + "}"
                errs.append(FieldError.invalid(path, GoValue(shown), "Only one reference can have Controller set to "
                                               f'true. Found "true" in references for {first_controller} and '
                                               f"{current}"))
            else:
                first_controller = current
    return errs


def _go_owner_reference(ref: Mapping[str, object]) -> str:
    """%#v of a v1.OwnerReference (its bool pointers as set or nil)."""
    def pointer(name: str) -> str:
        return "(*bool)(nil)" if ref.get(name) is None else f"(*bool)({GO_POINTER})"

    return (f"v1.OwnerReference{{APIVersion:{go_quote(str(ref.get('apiVersion') or ''))}, "
            f"Kind:{go_quote(str(ref.get('kind') or ''))}, Name:{go_quote(str(ref.get('name') or ''))}, "
            f"UID:{go_quote(str(ref.get('uid') or ''))}, Controller:{pointer('controller')}, "
            f"BlockOwnerDeletion:{pointer('blockOwnerDeletion')}}}")


def validate_finalizers(finalizers: list[object], path: str) -> list[FieldError]:
    """ValidateFinalizers: each a qualified name, and not both orphan and foregroundDeletion."""
    errs: list[FieldError] = []
    for finalizer in finalizers:
        text = str(finalizer)
        errs.extend(FieldError.invalid(path, text, m) for m in is_qualified_name(text))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        shown = "[]string{" + ", ".join(go_quote(str(f)) for f in finalizers) + "}"
        errs.append(FieldError.invalid(path, GoValue(shown),
                                       "finalizer orphan and foregroundDeletion cannot be both set"))
    return errs
