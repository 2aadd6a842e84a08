"""A validator for the small part of JSON Schema the tool parameters use, with messages an agent
can act on: which argument, what it must be, what it got.

Supported keywords: type (one name or a list), properties, required, additionalProperties (false),
items, minItems, maxItems, minimum, maximum, minLength, maxLength, enum. Anything else in a schema
is an error here, so a schema can never promise a check that does not run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_KNOWN = {
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "enum",
    "default",
}
_NAMES = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def _is(value: Any, kind: str) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    raise ValueError(f"unsupported schema type {kind!r}")


def shown(value: Any, limit: int = 40) -> str:
    """A value as JSON, shortened: what an error message quotes back."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _where(path: str) -> str:
    return f'"{path}"' if path else "the arguments"


def validate(schema: dict[str, Any], value: Any, path: str = "") -> str | None:
    """The first problem with `value` under `schema` as a sentence, or None when it is valid."""
    unknown = set(schema) - _KNOWN
    if unknown:
        raise ValueError(f"unsupported schema keywords: {sorted(unknown)}")
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        if not any(_is(value, k) for k in kinds):
            return (
                f"{_where(path)} must be "
                f"{' or '.join(_NAMES[k] for k in kinds)}, got {shown(value)}"
            )
    if "enum" in schema and value not in schema["enum"]:
        return (
            f"{_where(path)} must be one of "
            f"{', '.join(shown(v) for v in schema['enum'])}, got {shown(value)}"
        )
    if isinstance(value, str) and len(value.strip()) < schema.get("minLength", 0):
        return f"{_where(path)} must not be empty"
    if isinstance(value, str) and len(value) > schema.get("maxLength", len(value)):
        return (
            f"{_where(path)} may be at most {schema['maxLength']:,} "
            f"characters long, got {len(value):,}"
        )
    if _is(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{_where(path)} must be at least {schema['minimum']}, got {shown(value)}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{_where(path)} must be at most {schema['maximum']}, got {shown(value)}"
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return (
                f"{_where(path)} must list at least {schema['minItems']} "
                f"item{'s' if schema['minItems'] != 1 else ''}"
            )
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{_where(path)} may list at most {schema['maxItems']} items, got {len(value)}"
        for i, item in enumerate(value):
            problem = validate(schema.get("items", {}), item, f"{path}[{i}]")
            if problem:
                return problem
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties", {})
        inside = f" in {_where(path)}" if path else ""
        if schema.get("additionalProperties", True) is False:
            for name in value:
                if name not in props:
                    return f'unknown argument "{name}"{inside} (allowed: {", ".join(props)})'
        for name in schema.get("required", []):
            if name not in value:
                return f'missing "{name}"{inside}'
        for name, sub in props.items():
            if name in value:
                problem = validate(sub, value[name], f"{path}.{name}" if path else name)
                if problem:
                    return problem
    return None


def decode_arguments(
    schema: dict[str, Any], raw: Any, example: str
) -> tuple[dict[str, Any] | None, str | None]:
    """A tool call's arguments (a JSON string, as models send them, a mapping, or nothing) checked
    against `schema`: (arguments, None), or (None, what is wrong, with the `example` call)."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raw = {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as e:
            return None, f"the arguments are not valid JSON ({e}). Example: {example}"
    args = dict(raw) if isinstance(raw, Mapping) else raw
    problem = validate(schema, args)
    if problem:
        return None, f"{problem}. Example: {example}"
    return args, None


def describe_params(schema: dict[str, Any]) -> str:
    """`name` (type, required or optional, bounds): description; ... for an object schema."""
    out = []
    for name, sub in schema.get("properties", {}).items():
        kinds = sub.get("type", "any")
        kind = " or ".join(kinds) if isinstance(kinds, list) else kinds
        bits = [kind, "required" if name in schema.get("required", []) else "optional"]
        if "minimum" in sub or "maximum" in sub:
            bits.append(f"{sub.get('minimum', '')}..{sub.get('maximum', '')}")
        if kind == "array":
            bits.append(
                f"{sub.get('minItems', 0)} to {sub.get('maxItems', 'any')} items, each an object "
                f"with {describe_params(sub['items'])}"
            )
        text = f"`{name}` ({', '.join(bits)})"
        if sub.get("description"):
            text += f": {sub['description']}"
        out.append(text)
    return "; ".join(out)
