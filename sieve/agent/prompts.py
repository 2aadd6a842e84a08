"""Prompt templates are data files, rendered strictly: a missing or unused variable is an error."""

from __future__ import annotations

import hashlib
import re
from importlib import resources

_FIELD = re.compile(r"\{([a-z_]+)\}")


def template(name: str) -> str:
    return resources.files("sieve.agent").joinpath("prompts", name).read_text(encoding="utf-8")


def render(text: str, **values: str) -> str:
    """Fill `{name}` fields; every field must be given and every value used."""
    wanted = set(_FIELD.findall(text))
    missing, unused = wanted - values.keys(), values.keys() - wanted
    if missing or unused:
        raise KeyError(f"template fields missing {sorted(missing)}, unused {sorted(unused)}")
    return _FIELD.sub(lambda m: values[m.group(1)], text)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]
