"""The JSON Schema of trace format v1, loaded from the package and compiled once.

``event_validator(type)`` returns a fast compiled validator (fastjsonschema) for
one event type; ``header_validator()`` for the header line. Both raise
``fastjsonschema.JsonSchemaException``; ``describe_schema_error`` turns that into
a short reason that names the field.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources

import fastjsonschema

FORMAT_NAME = "snapcheck-trace"
FORMAT_VERSION = 1


@cache
def schema() -> dict:
    """The full JSON Schema document (draft 2020-12)."""
    text = resources.files("snapcheck.traces").joinpath("schema/trace-v1.schema.json").read_text()
    return json.loads(text)


def _compile(def_name: str):
    doc = schema()
    wrapper = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$ref": f"#/definitions/{def_name}",
        "definitions": doc["$defs"],
    }
    text = json.dumps(wrapper).replace("#/$defs/", "#/definitions/")
    return fastjsonschema.compile(json.loads(text))


@cache
def event_validator(event_type: str):
    return _compile(f"event_{event_type}")


@cache
def header_validator():
    return _compile("header")


def _expr(prop: dict, defs: dict, v: str) -> str | None:
    """A Python expression over the value named ``v`` that is true exactly when the value
    satisfies ``prop`` (for the keywords the trace schema uses), or None."""
    if "$ref" in prop:
        prop = defs[prop["$ref"].rsplit("/", 1)[1]]
    rest = set(prop) - {"description", "default"}
    if not rest:
        return "True"
    if "const" in prop:
        c = prop["const"]
        return f"{v} == {c!r}" if isinstance(c, str) else None
    if "enum" in prop:
        if not all(isinstance(x, str) for x in prop["enum"]):
            return None
        return f"(type({v}) is str and {v} in {frozenset(prop['enum'])!r})"
    t = prop.get("type")
    if t == "string" and rest <= {"type", "minLength", "maxLength", "pattern"}:
        lo, hi = prop.get("minLength", 0), prop.get("maxLength", 2**63)
        matches = f" and RX[{prop['pattern']!r}].search({v}) is not None" if "pattern" in prop else ""
        return f"(type({v}) is str and {lo} <= len({v}) <= {hi}{matches})"
    if t == "integer" and rest <= {"type", "minimum", "maximum"}:
        lo, hi = prop.get("minimum", -(2**63)), prop.get("maximum", 2**63 - 1)
        return f"(type({v}) is int and {lo} <= {v} <= {hi})"
    if t == "number" and rest == {"type"}:
        return f"type({v}) in NUMBER"
    if t == "boolean" and rest == {"type"}:
        return f"type({v}) is bool"
    if t == "object" and rest <= {"type", "required", "properties", "additionalProperties"}:
        return _object_expr(prop, defs, v)
    if t == "array" and "prefixItems" in prop and rest <= {"type", "prefixItems", "minItems", "maxItems"}:
        parts = [_expr(sub, defs, f"{v}[{i}]") for i, sub in enumerate(prop["prefixItems"])]
        lo, hi = prop.get("minItems", 0), prop.get("maxItems", 2**63)
        if None in parts or lo < len(parts):  # (exact only when every prefix item is there)
            return None
        return f"(type({v}) is list and {lo} <= len({v}) <= {hi} and " + " and ".join(map(str, parts)) + ")"
    if t == "array" and rest <= {"type", "items", "minItems", "maxItems"}:
        x = f"x{len(v)}"  # a name per nesting level: inner expressions are longer
        item = _expr(prop.get("items", {}), defs, x)
        if item is None:
            return None
        out = f"type({v}) is list"
        if "minItems" in prop or "maxItems" in prop:
            out += f" and {prop.get('minItems', 0)} <= len({v}) <= {prop.get('maxItems', 2**63)}"
        return "(" + out + ("" if item == "True" else f" and all({item} for {x} in {v})") + ")"
    return None


def _object_expr(prop: dict, defs: dict, v: str) -> str | None:
    """``_expr`` of an object schema: its type, its required keys, each present
    property's own schema, and for the other keys none (``additionalProperties``
    false) or the schema ``additionalProperties`` gives."""
    props = prop.get("properties", {})
    extra = prop.get("additionalProperties", True)
    parts = [f"type({v}) is dict"]
    if extra is False:
        parts.append(f"{frozenset(props)!r}.issuperset({v})")
    elif extra is not True:  # a schema every other property's value must satisfy
        k = f"k{len(v)}"
        e = _expr(extra, defs, f"{v}[{k}]")
        if e is None:
            return None
        if e != "True":
            parts.append(f"all({e} for {k} in {v} if {k} not in {frozenset(props)!r})")
    parts += [f"{k!r} in {v}" for k in prop.get("required", ())]
    for k, sub in props.items():
        e = _expr(sub, defs, f"{v}[{k!r}]")
        if e is None:
            return None
        if e != "True":
            parts.append(f"({k!r} not in {v} or {e})")
    return "(" + " and ".join(parts) + ")"


@cache
def fast_event_check(event_type: str, trusted: frozenset = frozenset()):
    """A predicate that accepts exactly the events of this type (``d["type"] == event_type``,
    on which the caller dispatched) the schema accepts: required fields present, no
    unknown field, every value of the right type (generated code, straight line per
    event type). Events it rejects go to the full schema validator, which
    decides and words the error; a type whose schema uses keywords it does not translate
    gets a predicate that sends every event there. The values of the ``trusted`` fields
    are not checked: the caller checks them itself (e.g. by finding an id among the
    header's ids) and asks the full validator when they do not pass.

    >>> check = fast_event_check("recv")
    >>> check({"type": "recv", "proc": "B", "idx": 0, "ch": "ab", "mid": "ab:1"})
    True
    >>> check({"type": "recv", "proc": "B", "idx": -1, "ch": "ab", "mid": "ab:1"})
    False
    >>> fast_event_check("recv", frozenset({"proc"}))({"type": "recv", "proc": 7, "idx": 0, "ch": "c", "mid": "m"})
    True
    """
    return _generated_check(event_type, trusted, None)


def keyed_event_check(event_type: str, keys: tuple, trusted: frozenset = frozenset()):
    """``fast_event_check`` for the events whose keys are exactly ``keys``: it checks only
    the values of those fields (whether the key set is allowed and complete is decided
    once, here). Not cached: a caller keeps a bounded table of the key orders it meets.

    >>> check = keyed_event_check("recv", ("type", "proc", "idx", "ch", "mid"))
    >>> check({"type": "recv", "proc": "B", "idx": 0, "ch": "ab", "mid": "ab:1"})
    True
    >>> check({"type": "recv", "proc": "B", "idx": -1, "ch": "ab", "mid": "ab:1"})
    False
    >>> keyed_event_check("recv", ("type", "proc", "idx", "ch"))({"type": "recv", "proc": "B", "idx": 0, "ch": "ab"})
    False
    """
    return _generated_check(event_type, trusted, keys)


def _generated_check(event_type: str, trusted: frozenset, keys: tuple | None):
    """The predicate of ``fast_event_check`` (``keys`` None) or ``keyed_event_check``."""
    defs = schema()["$defs"]
    ev = defs[f"event_{event_type}"]
    required = frozenset(ev["required"])
    props = ev["properties"]
    if keys is not None:
        if not required <= set(keys) <= set(props):
            return _refuse
        body = []
        for k in keys:
            if k == "type" or k in trusted:
                continue
            e = _expr(props[k], defs, "v")
            if e is None:
                return _refuse
            if e != "True":
                body += [f"    v = d[{k!r}]", f"    if not ({e}):", "        return False"]
        return _compiled(["def check(d):", *body, "    return True"], props)
    body = []
    present = [
        k for k in props if k in required and k != "type" and (k in trusted or _expr(props[k], defs, "v") == "True")
    ]
    if present:
        body += [f"    if not ({' and '.join(f'{k!r} in d' for k in present)}):", "        return False"]
    for k, p in props.items():
        if k == "type" or k in trusted:  # callers dispatch on d["type"]: it is the const already
            continue
        e = _expr(p, defs, "v")
        if e is None:
            return _refuse
        if e == "True":
            continue
        if k in required:  # a missing required field raises KeyError: not accepted
            body += [f"    v = d[{k!r}]", f"    if not ({e}):", "        return False"]
        else:
            body += [
                f"    if {k!r} in d:",
                f"        v = d[{k!r}]",
                f"        if not ({e}):",
                "            return False",
            ]
    lines = ["def check(d):", "    if not ALLOWED.issuperset(d):", "        return False", "    try:"]
    lines += ["    " + x for x in body] + ["    except KeyError:", "        return False", "    return True"]
    return _compiled(lines, props)


class _Patterns(dict):
    """The schema's ``pattern`` regular expressions, compiled on first use."""

    def __missing__(self, pattern: str) -> re.Pattern:
        compiled = self[pattern] = re.compile(pattern)
        return compiled


RX = _Patterns()


def _compiled(lines: list[str], props: dict):
    scope = {"ALLOWED": frozenset(props), "NUMBER": frozenset((int, float)), "RX": RX}
    exec("\n".join(lines), scope)
    return scope["check"]


def _refuse(d) -> bool:
    """The predicate of events the generated checks leave to the full schema validator."""
    return False


@cache
def _field_checks(event_type: str) -> dict:
    defs = schema()["$defs"]
    out = {}
    for k, p in defs[f"event_{event_type}"]["properties"].items():
        e = _expr(p, defs, "v")
        if e not in (None, "True"):
            out[k] = eval(f"lambda v: {e}", {"NUMBER": frozenset((int, float)), "RX": RX})
    return out


def stricter_than_schema(event_type: str, d: dict) -> str | None:
    """Why the generated check rejects an event the JSON Schema accepts: the format
    wants integers written as integers, where JSON Schema also takes ``1.0``.

    >>> stricter_than_schema("fail", {"type": "fail", "proc": "A", "idx": 1.0})
    "field 'idx' must be an integer written without a fraction, found 1.0"
    """
    for k, check in _field_checks(event_type).items():
        if k in d and not check(d[k]):
            return _with_fraction(k, d[k])
    return None


def _with_fraction(field: str, value: object) -> str:
    return f"field {field!r} must be an integer written without a fraction, found {value!r}"


def header_stricter_than_schema(d: dict) -> str | None:
    """``stricter_than_schema`` for a header the schema accepts: why it is refused for
    a field the schema wants an integer for (``type`` integer or an integer ``const``)
    written with a fraction, the first one found (None: there is none).

    >>> header_stricter_than_schema({"version": 1.0, "processes": [{"id": "A"}], "channels": []})
    "field 'version' must be an integer written without a fraction, found 1.0"
    >>> header_stricter_than_schema({"version": 1, "processes": [{"id": "A", "subtask": 0.0}], "channels": []})
    "field 'processes[0].subtask' must be an integer written without a fraction, found 0.0"
    """
    defs = schema()["$defs"]
    found = _fraction_in(d, defs["header"], defs, "")
    return None if found is None else _with_fraction(*found)


def _fraction_in(value: object, prop: dict, defs: dict, path: str) -> tuple[str, float] | None:
    """(path, value) of the first float in ``value`` where ``prop`` wants an integer."""
    if "$ref" in prop:
        prop = defs[prop["$ref"].rsplit("/", 1)[1]]
    for sub in prop.get("anyOf", ()):
        found = _fraction_in(value, sub, defs, path)
        if found is not None:
            return found
    if isinstance(value, float):
        types = prop.get("type")
        wants_int = "integer" in (types if isinstance(types, list) else [types])
        const = prop.get("const")
        return (path, value) if wants_int or (type(const) is int) else None
    if isinstance(value, dict):
        props, extra = prop.get("properties", {}), prop.get("additionalProperties")
        for k, v in value.items():
            sub = props.get(k, extra if isinstance(extra, dict) else {})
            found = _fraction_in(v, sub, defs, f"{path}.{k}" if path else k)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = _fraction_in(v, prop.get("items", {}), defs, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def event_types() -> tuple[str, ...]:
    return tuple(k[len("event_") :] for k in schema()["$defs"] if k.startswith("event_"))


_FIELD = re.compile(r"^data(?:\.|\[)?(.*)$")


def describe_schema_error(exc: fastjsonschema.JsonSchemaException) -> str:
    """Rewrite a fastjsonschema message ("data.seq must be integer") to name the field."""
    name = getattr(exc, "name", "data") or "data"
    field = _FIELD.match(name)
    path = field.group(1) if field else name
    msg: str = getattr(exc, "message", str(exc))
    if msg.startswith(name + " "):
        msg = msg[len(name) + 1 :]
    if "must not contain" in msg and "properties" in msg:
        extra = re.findall(r"\{'([^']+)'", msg) or re.findall(r"'([^']+)'", msg)
        return f"unknown field {extra[0]!r}" if extra else "unknown field"
    if "must contain" in msg and "properties" in msg:
        missing = re.findall(r"'([^']+)'", msg)
        return f"missing field {missing[0]!r}" if missing else "missing field"
    definition = getattr(exc, "definition", None)
    if getattr(exc, "rule", None) == "anyOf" and isinstance(definition, dict) and "description" in definition:
        msg = f"must be {definition['description']}"  # "cannot be validated by any definition" says nothing
    if getattr(exc, "rule", None) == "pattern" and isinstance(definition, dict) and "description" in definition:
        value = getattr(exc, "value", None)
        shown = repr(value).encode("ascii", "backslashreplace").decode() if isinstance(value, str) else "it"
        msg = f"{shown}: {definition['description']}"  # a regular expression says nothing to a reader
    if path:
        return f"field {path!r} {msg}"
    return msg
