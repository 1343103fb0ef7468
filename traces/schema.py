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
    text = resources.files("traces").joinpath("schema/trace-v1.schema.json").read_text()
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
