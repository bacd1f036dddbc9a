"""Compile a CRD version's x-kubernetes-validations once, and evaluate them on every write of its objects.

Compiling (compile_schema, cached by schema text) gives the CRD's errors with kube's paths and messages:

    spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid
    value: apiextensions.ValidationRule{Rule:"self.foo == 1", ...}: compilation failed: ERROR: <input>:1:5:
    undefined field 'foo'

and costs over the limits are Forbidden (`estimated rule cost exceeds budget by factor of ...`). Evaluation
(validate) walks the object beside the compiled tree: `self` is the value at the rule's schema, `oldSelf`
the correlated old value (object fields, map entries and map-list items by key); a transition rule (one
that names oldSelf) runs only when that old value exists. Null values are never validated (kube leaves
nullable checks to the enclosing schema).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from server.machinery.crdschema.cel import check, library, parse
from server.machinery.crdschema.cel.engine import engine
from server.machinery.validation.names import ErrorType, FieldError, GoValue, go_quote

PER_CALL_LIMIT = 1_000_000  # celconfig.PerCallLimit: one evaluation's runtime cost
RUNTIME_BUDGET = 10_000_000  # celconfig.RuntimeCELCostBudget: all rules of one object
STATIC_RULE_LIMIT = 10_000_000  # StaticEstimatedCostLimit: one rule's estimate times its cardinality
STATIC_CRD_LIMIT = 100_000_000  # StaticEstimatedCRDCostLimit: all rules of one schema
_COST_HINT = ("(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, "
              "and strings are declared)")
_REASONS = {"FieldValueForbidden": ErrorType.FORBIDDEN, "FieldValueRequired": ErrorType.REQUIRED,
            "FieldValueDuplicate": ErrorType.DUPLICATE}


@dataclass(frozen=True)
class Rule:
    text: str
    program: Any
    message: str
    message_program: Any
    reason: ErrorType
    field_path: str
    transition: bool
    tree: parse.Node
    cost: int


@dataclass(frozen=True)
class Node:
    """A schema node holding rules, or leading to one: only such nodes are kept."""

    schema: Mapping[str, Any]
    type_name: str
    rules: tuple[Rule, ...]
    properties: Mapping[str, Node]
    items: Node | None
    additional: Node | None
    map_keys: tuple[str, ...]


@dataclass(frozen=True)
class Compiled:
    root: Node | None
    errors: tuple[FieldError, ...]


def compile_schema(schema: Mapping[str, Any], path: str) -> Compiled:
    """The rules of one version's openAPIV3Schema (`path` names it), compiled once per schema text."""
    return _compile_cached(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS), path)


@lru_cache(maxsize=256)
def _compile_cached(text: bytes, path: str) -> Compiled:
    compiler = _Compiler()
    root = compiler.node(orjson.loads(text), path, cardinality=1, root=True, uncorrelatable="")
    errors = compiler.errors
    if compiler.total > STATIC_CRD_LIMIT:
        # TotalCost.MostExpensive: the dearest rules that alone exceed the limit, dearest first.
        running = 0
        for cost, where in sorted(compiler.costs, key=lambda c: -c[0])[:4]:
            errors.append(FieldError.forbidden(where, "contributed to estimated rule cost total exceeding cost limit "
                                               "for entire OpenAPIv3 schema"))
            running = check._add(running, cost)
            if running > STATIC_CRD_LIMIT:
                break
        errors.append(FieldError.forbidden(path, _cost_message(
            "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", compiler.total,
            STATIC_CRD_LIMIT)))
    return Compiled(root, tuple(errors))


def _cost_message(name: str, cost: int, limit: int) -> str:
    factor = cost / limit
    if factor > 100:
        text = "more than 100x"
    elif factor < 1.5:
        text = f"{factor:f}x"
    else:
        text = f"{factor:.1f}x"
    return f"{name} exceeds budget by factor of {text} {_COST_HINT}"


def _go_rule(rule: Mapping[str, Any]) -> GoValue:
    """%#v of apiextensions.ValidationRule, as kube prints the bad value of a compile error."""
    reason = rule.get("reason")
    reason_text = ("(*apiextensions.FieldValueErrorReason)(nil)" if reason is None
                   else f"(*apiextensions.FieldValueErrorReason)({go_quote(str(reason))})")
    return GoValue(f"apiextensions.ValidationRule{{Rule:{go_quote(rule.get('rule') or '')}, "
                   f"Message:{go_quote(rule.get('message') or '')}, "
                   f"MessageExpression:{go_quote(rule.get('messageExpression') or '')}, Reason:{reason_text}, "
                   f"FieldPath:{go_quote(rule.get('fieldPath') or '')}}}")


def display_issues(text: str, issues: list[tuple[int, str]]) -> str:
    """cel-go's issues.String(): each error with its position and the line it points into."""
    out = []
    for pos, message in sorted(issues):
        line_start = text.rfind("\n", 0, pos) + 1
        line_end = text.find("\n", pos)
        line = text[line_start:line_end if line_end >= 0 else len(text)]
        number = text.count("\n", 0, pos) + 1
        column = pos - line_start
        out.append(f"ERROR: <input>:{number}:{column + 1}: {message}\n | {line}\n | {'.' * column}^")
    return "\n".join(out)


def engine_compile(text: str) -> tuple[Any, str]:
    """(program, "") or (None, cel-go's syntax error text): the engine's parser is cel-go's ANTLR grammar."""
    try:
        return engine().compile(text), ""
    except ValueError as err:
        detail = str(err)
        detail = detail[detail.find("ERROR: "):] if "ERROR: " in detail else detail
        return None, re.sub(r"\n\| ", "\n | ", detail)


class _Compiler:
    def __init__(self) -> None:
        self.errors: list[FieldError] = []
        self.total = 0
        self.costs: list[tuple[int, str]] = []

    def node(self, s: Mapping[str, Any], path: str, *, cardinality: int, root: bool, uncorrelatable: str
             ) -> Node | None:
        properties: dict[str, Node] = {}
        correlatable_map = s.get("x-kubernetes-map-type") != "atomic"
        for name, prop in (s.get("properties") or {}).items():
            if isinstance(prop, dict):
                found = self.node(prop, f"{path}.properties[{name}]", cardinality=cardinality, root=False,
                                  uncorrelatable=uncorrelatable or ("" if correlatable_map else path))
                if found is not None:
                    properties[name] = found
        items = None
        if isinstance(s.get("items"), dict):
            keep = uncorrelatable or ("" if s.get("x-kubernetes-list-type") == "map" else path)
            items = self.node(s["items"], f"{path}.items", cardinality=_times(cardinality, check.max_items(s)),
                              root=False, uncorrelatable=keep)
        additional = None
        if isinstance(s.get("additionalProperties"), dict):
            additional = self.node(s["additionalProperties"], f"{path}.additionalProperties",
                                   cardinality=_times(cardinality, check.max_properties(s)), root=False,
                                   uncorrelatable=uncorrelatable or ("" if correlatable_map else path))
        rules = tuple(r for i, raw in enumerate(s.get("x-kubernetes-validations") or [])
                      if isinstance(raw, dict)
                      and (r := self.rule(raw, s, f"{path}.x-kubernetes-validations[{i}]", cardinality, root,
                                          uncorrelatable)) is not None)
        if not (rules or properties or items or additional):
            return None
        return Node(s, s.get("type") or "", rules, properties, items, additional,
                    tuple(s.get("x-kubernetes-list-map-keys") or ()))

    def rule(self, raw: Mapping[str, Any], s: Mapping[str, Any], path: str, cardinality: int, root: bool,
             uncorrelatable: str) -> Rule | None:
        text = (raw.get("rule") or "").strip()
        if not text:
            return None
        program, syntax = engine_compile(raw.get("rule") or "")
        own = check.type_of(s, root=root)
        tree: parse.Node | None = None
        cost = 0
        if program is not None:
            tree = parse.parse(raw.get("rule") or "")
            checker = check.Checker({"self": own, "oldSelf": own}, frozenset({"self", "oldSelf"} if root else ()))
            _, cost = checker.walk(tree)
            if checker.errors:
                syntax = display_issues(raw.get("rule") or "", checker.errors)
        total = check._mul(cost, cardinality)
        if program is not None and total > STATIC_RULE_LIMIT:
            self.errors.append(FieldError.forbidden(f"{path}.rule",
                                                    _cost_message("estimated rule cost", total, STATIC_RULE_LIMIT)))
        self.total = check._add(self.total, total)
        self.costs.append((total, f"{path}.rule"))
        if syntax:
            self.errors.append(FieldError.invalid(f"{path}.rule", _go_rule(raw), "compilation failed: " + syntax))
            return None
        assert tree is not None
        transition = _names_old_self(tree)
        if transition and uncorrelatable:
            self.errors.append(FieldError.invalid(f"{path}.rule", raw.get("rule") or "", "oldSelf cannot be used on "
                                                  f"the uncorrelatable portion of the schema within {uncorrelatable}"))
        message_program = None
        expression = raw.get("messageExpression") or ""
        if expression.strip():
            message_program, problem = engine_compile(expression)
            if not problem:
                checker = check.Checker({"self": own, "oldSelf": own})
                checker.walk(parse.parse(expression))
                if checker.errors:
                    problem = display_issues(expression, checker.errors)
            if problem:
                self.errors.append(FieldError.invalid(f"{path}.messageExpression", _go_rule(raw),
                                                      "messageExpression compilation failed: " + problem))
        return Rule(text=raw.get("rule") or "", program=program, message=(raw.get("message") or "").strip(),
                    message_program=message_program, reason=_REASONS.get(raw.get("reason") or "", ErrorType.INVALID),
                    field_path=_field_path(raw.get("fieldPath") or ""), transition=transition, tree=tree, cost=cost)


def _times(a: int, b: int) -> int:
    return check._mul(a, b)


def _names_old_self(node: parse.Node) -> bool:
    if isinstance(node, parse.Ident):
        return node.name == "oldSelf"
    return any(_names_old_self(child) for child in _children(node))


def _children(node: parse.Node) -> list[parse.Node]:
    if isinstance(node, parse.Select):
        return [node.operand]
    if isinstance(node, parse.Call):
        return [*([node.target] if node.target is not None else []), *node.args]
    if isinstance(node, parse.Comprehension):
        return [node.range, *node.args]
    if isinstance(node, parse.ListExpr):
        return list(node.items)
    if isinstance(node, parse.MapExpr):
        return [x for entry in node.entries for x in entry]
    return []


def _field_path(text: str) -> str:
    """fieldPath (`.spec.ports['http']`) as field.Path appends it: `spec.ports[http]`."""
    out = ""
    for name, key, index in re.findall(r"\.([A-Za-z_$][\w$-]*)|\[\s*'((?:[^'\\]|\\.)*)'\s*\]|\[(\d+)\]", text):
        if name:
            out += ("." if out else "") + name
        else:
            out += f"[{key or index}]"
    return out


# --- evaluation -------------------------------------------------------------------------------------------------


@dataclass
class _Budget:
    remaining: int = RUNTIME_BUDGET
    halted: bool = False


_FUNCTIONS = library.FUNCTIONS


def validate(root: Node | None, obj: Any, old: Any) -> list[FieldError]:
    """Every rule's error for a write of `obj` (old: the stored object on update, else None)."""
    if root is None:
        return []
    errs: list[FieldError] = []
    _walk(root, obj, old, "", errs, _Budget())
    return errs


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _walk(node: Node, value: Any, old: Any, path: str, errs: list[FieldError], budget: _Budget) -> None:
    if value is None or budget.halted:
        return
    for rule in node.rules:
        if rule.transition and old is None:
            continue
        _run(node, rule, value, old, path, errs, budget)
        if budget.halted:
            return
    if isinstance(value, dict):
        olds = old if isinstance(old, dict) else {}
        for key, child in value.items():
            sub = node.properties.get(key) if node.properties else node.additional
            if sub is not None:
                _walk(sub, child, olds.get(key), _join(path, key) if node.properties else f"{path}[{key}]", errs,
                      budget)
    elif isinstance(value, list) and node.items is not None:
        by_key: dict[tuple[Any, ...], Any] = {}
        if node.map_keys and isinstance(old, list):
            by_key = {tuple(o.get(k) for k in node.map_keys): o for o in old if isinstance(o, dict)}
        for index, item in enumerate(value):
            previous = by_key.get(tuple(item.get(k) for k in node.map_keys)) if isinstance(item, dict) else None
            _walk(node.items, item, previous, f"{path}[{index}]", errs, budget)


def _run(node: Node, rule: Rule, value: Any, old: Any, path: str, errs: list[FieldError], budget: _Budget) -> None:
    where = path or "<nil>"
    cost = rule.cost
    if cost > 1000:  # cheap rules are charged their estimate; dear ones what this value's sizes allow
        own = check.value_type(node.schema, value)
        cost = check.Checker({"self": own, "oldSelf": own}).walk(rule.tree)[1]
    shown = rule.message or rule.text.strip()
    if cost > PER_CALL_LIMIT:
        errs.append(FieldError.invalid(where, node.type_name, "'operation cancelled: actual cost limit exceeded': no "
                                       "further validation rules will be run due to call cost exceeds limit for "
                                       f"rule: {shown}"))
        budget.halted = True
        return
    if cost > budget.remaining:
        errs.append(FieldError.invalid(where, node.type_name, "validation failed due to running out of cost budget, "
                                       "no further validation rules will be run"))
        budget.halted = True
        return
    budget.remaining -= cost
    context = engine().Context(variables={"self": value, "oldSelf": old}, functions=_FUNCTIONS)
    try:
        result = rule.program.execute(context)
    except Exception as err:  # the engine raises builtin errors for CEL's runtime errors
        text = _runtime_error(err)
        if text == "no such overload":
            errs.append(FieldError.invalid(where, node.type_name, "'no such overload': call arguments did not match a "
                                           f"supported operator, function or macro signature for rule: {shown}"))
        else:
            errs.append(FieldError.invalid(where, node.type_name, f"{text} evaluating rule: {shown}"))
        return
    if result is True:
        return
    target = where
    if rule.field_path:
        target = f"{path}{rule.field_path}" if rule.field_path.startswith("[") else _join(path, rule.field_path)
    detail = rule.message or f"failed rule: {rule.text.strip()}"
    if rule.message_program is not None:
        try:
            made = rule.message_program.execute(context)
            if isinstance(made, str) and made.strip() and "\n" not in made:
                detail = made
        except Exception:  # kube logs a failing messageExpression and falls back to the message
            pass
    # fieldErrorForReason: Forbidden and Required show no value; Invalid and Duplicate the schema's type.
    shown_value = "" if rule.reason in (ErrorType.FORBIDDEN, ErrorType.REQUIRED) else node.type_name
    errs.append(FieldError(rule.reason, target, shown_value, detail))


def _runtime_error(err: Exception) -> str:
    """cel-go's wording of the engine's runtime error."""
    text = str(err)
    if isinstance(err, KeyError):
        return f"no such key: {text.strip(chr(39))}"
    if isinstance(err, OverflowError):
        return "integer overflow"
    if isinstance(err, ZeroDivisionError):
        return "modulus by zero" if "rem" in text or "mod" in text else "division by zero"
    if isinstance(err, IndexError):
        return "index out of bounds: " + text.rpartition(":")[2].strip() if ":" in text else text
    if isinstance(err, TypeError) or "No matching overload" in text or "Unsupported operation" in text:
        return "no such overload"
    found = re.search(r"LibraryError: (.*?)\. Check function", text)
    return found.group(1) if found else text
