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
    wrapper = {"$schema": "http://json-schema.org/draft-07/schema#", "$ref": f"#/definitions/{def_name}",
               "definitions": doc["$defs"]}
    text = json.dumps(wrapper).replace("#/$defs/", "#/definitions/")
    return fastjsonschema.compile(json.loads(text))


@cache
def event_validator(event_type: str):
    return _compile(f"event_{event_type}")


@cache
def header_validator():
    return _compile("header")


def _value_check(prop: dict, defs: dict):
    """A fast predicate equivalent to (or stricter than) one property's schema, or None."""
    if "$ref" in prop:
        prop = defs[prop["$ref"].rsplit("/", 1)[1]]
    if not prop:
        return lambda v: True
    if "const" in prop:
        c = prop["const"]
        return lambda v: v == c and type(v) is type(c)
    if "enum" in prop:
        allowed = frozenset(prop["enum"])
        return lambda v: isinstance(v, str) and v in allowed
    t = prop.get("type")
    if t == "string":
        lo, hi = prop.get("minLength", 0), prop.get("maxLength", 10**9)
        return lambda v: type(v) is str and lo <= len(v) <= hi
    if t == "integer":
        lo, hi = prop.get("minimum", -2**63), prop.get("maximum", 2**63 - 1)
        return lambda v: type(v) is int and lo <= v <= hi
    if t == "number":
        return lambda v: type(v) in (int, float)
    if t == "boolean":
        return lambda v: type(v) is bool
    if t == "object" and set(prop) <= {"type", "description"}:
        return lambda v: type(v) is dict
    if t == "array" and set(prop) <= {"type", "items"}:
        item = _value_check(prop.get("items", {}), defs)
        return None if item is None else (lambda v: type(v) is list and all(item(x) for x in v))
    return None


@cache
def fast_event_check(event_type: str):
    """A predicate that accepts exactly the events the schema accepts on the common path:
    required fields present, no unknown field, every value of the right type. Events it
    rejects go to the full schema validator, which decides and words the error."""
    defs = schema()["$defs"]
    ev = defs[f"event_{event_type}"]
    required = frozenset(ev["required"])
    checks = {k: _value_check(p, defs) for k, p in ev["properties"].items()}
    if any(c is None for c in checks.values()):
        return lambda d: False

    def check(d: dict) -> bool:
        if not required.issubset(d):
            return False
        for k, v in d.items():
            c = checks.get(k)
            if c is None or not c(v):
                return False
        return True

    return check


def event_types() -> tuple[str, ...]:
    return tuple(k[len("event_"):] for k in schema()["$defs"] if k.startswith("event_"))


_FIELD = re.compile(r"^data(?:\.|\[)?(.*)$")


def describe_schema_error(exc: fastjsonschema.JsonSchemaException) -> str:
    """Rewrite a fastjsonschema message ("data.seq must be integer") to name the field."""
    name = getattr(exc, "name", "data") or "data"
    path = _FIELD.match(name).group(1).rstrip("]") if _FIELD.match(name) else name
    msg = exc.message
    if msg.startswith(name + " "):
        msg = msg[len(name) + 1:]
    if "must not contain" in msg and "properties" in msg:
        extra = re.findall(r"\{'([^']+)'", msg) or re.findall(r"'([^']+)'", msg)
        return f"unknown field {extra[0]!r}" if extra else "unknown field"
    if "must contain" in msg and "properties" in msg:
        missing = re.findall(r"'([^']+)'", msg)
        return f"missing field {missing[0]!r}" if missing else "missing field"
    if path:
        return f"field {path!r} {msg}"
    return msg
