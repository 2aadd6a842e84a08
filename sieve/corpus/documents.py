"""The document model and the validation that turns a corpus record into a `Document`."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sieve.common.isodate import parse_partial
from sieve.errors import CorpusError

T = TypeVar("T")

INTRO = "(intro)"

# Record keys with a meaning; every other key is kept as metadata, as it is.
_KNOWN_KEYS = {"id", "_id", "title", "sections", "text", "author", "date", "infobox"}
_SECTION_KEYS = ("heading", "text")
_SECTION_KEY_SET = frozenset(_SECTION_KEYS)
KEPT_SECTION_KEYS = "section_keys"  # metadata key of unknown section keys kept by a lenient read
_LENIENT_HINT = "--lenient (lenient=True) keeps unknown keys as metadata instead"


# A record's keys, in order -> (its known keys in another case, its metadata keys). A corpus's
# records share a few sets of keys: each set is sorted out once (1 of the 10 us a record took).
_KEY_ROLES: dict[tuple[Any, ...], tuple[list[str], tuple[Any, ...]]] = {}
_KEY_SETS_KEPT = 1 << 12


def _key_roles(rec: Mapping[Any, Any]) -> tuple[list[str], tuple[Any, ...]]:
    keys = tuple(rec)
    roles = _KEY_ROLES.get(keys)
    if roles is None:
        if len(_KEY_ROLES) >= _KEY_SETS_KEPT:
            _KEY_ROLES.clear()
        roles = _KEY_ROLES[keys] = (
            [
                k
                for k in keys
                if isinstance(k, str) and k not in _KNOWN_KEYS and k.lower() in _KNOWN_KEYS
            ],
            tuple(k for k in keys if k not in _KNOWN_KEYS),
        )
    return roles


def unknown_keys(rec: Mapping[str, Any]) -> list[str]:
    """Keys a record writes text under that the corpus format does not know: a known key in
    another case (`Title`, `TEXT`: never indexed, so the text would be silently lost) and any
    key of a section but `heading` and `text` (`body`), as `sections[i].key`. Other unknown
    top-level keys are metadata by design."""
    out = list(_key_roles(rec)[0])
    sections = rec.get("sections")
    if isinstance(sections, list):
        for i, sec in enumerate(sections):
            # The usual section is tested in one step; only one with another key is listed.
            if isinstance(sec, dict) and not sec.keys() <= _SECTION_KEY_SET:
                out += [f"sections[{i}].{k}" for k in sec if k not in _SECTION_KEYS]
    return out


def _refuse_unknown(rec: Mapping[str, Any]) -> None:
    found = unknown_keys(rec)
    if not found:
        return
    key = found[0]
    if key.startswith("sections["):
        raise CorpusError(
            f"{key}: a section has only the keys heading and text, so this text would not be "
            f"indexed; {_LENIENT_HINT}"
        )
    raise CorpusError(
        f"key {key!r} is not a corpus key: keys are lower case (did you mean {key.lower()!r}?), so "
        "this would not be indexed; "
        f"known keys: {', '.join(sorted(_KNOWN_KEYS))}; {_LENIENT_HINT}"
    )


# A full ISO timestamp is accepted and kept to its date: sieve filters by day.
_DATETIME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ]\d{2}:\d{2}")


@dataclass(frozen=True)
class Section:
    """One section: its heading (`(intro)` for text before the first heading) and its text."""

    heading: str
    text: str


@dataclass(frozen=True)
class Document:
    """A structured document as stored in the index."""

    id: str
    title: str
    sections: tuple[Section, ...]
    author: str | None = None
    date: str | None = None  # ISO `YYYY`, `YYYY-MM` or `YYYY-MM-DD`
    infobox: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def headings(self) -> list[str]:
        return [s.heading for s in self.sections]

    def optional_fields(self) -> dict[str, Any]:
        """author, date and infobox, for those the document has."""
        out: dict[str, Any] = {}
        if self.author is not None:
            out["author"] = self.author
        if self.date is not None:
            out["date"] = self.date
        if self.infobox:
            out["infobox"] = dict(self.infobox)
        return out

    @classmethod
    def stored(cls, store: Any, d: int) -> Document:
        """Document `d` read back from an index's store (anything with `meta(d)` and
        `section_text(d, j)`)."""
        meta = store.meta(d)
        return cls(
            id=meta["id"],
            title=meta["title"],
            sections=tuple(
                Section(h, store.section_text(d, j)) for j, h in enumerate(meta["headings"])
            ),
            author=meta.get("author"),
            date=meta.get("date"),
            infobox=meta.get("infobox", {}),
            metadata=meta.get("metadata", {}),
        )

    def to_record(self) -> dict[str, Any]:
        """The document as a corpus record (what `document_from_record` reads back)."""
        rec: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "sections": [{"heading": s.heading, "text": s.text} for s in self.sections],
            **self.optional_fields(),
        }
        rec.update(self.metadata)
        return rec


_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON = json.JSONEncoder(ensure_ascii=False)  # made once: json.dumps with options makes one a call


def _text(value: Any, what: str, *args: Any) -> str:
    """`value` if it is valid text, else CorpusError naming it as `what.format(*args)` (formatted
    only then: a record has many texts and they are nearly always valid)."""
    if not isinstance(value, str):
        raise CorpusError(f"{what.format(*args)} must be a string, got {type(value).__name__}")
    if not value.isascii():  # isascii is O(1); the search runs only on non-ASCII text
        bad = _SURROGATE.search(value)
        if bad:
            raise CorpusError(
                f"{what.format(*args)} holds a lone surrogate U+{ord(bad.group()):04X} at "
                f"character {bad.start()} (not valid Unicode text)"
            )
    return value


def _author(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return _text(value, "author")
    if isinstance(value, list) and all(isinstance(a, str) for a in value):
        return _text("; ".join(value), "author")
    raise CorpusError(f"author must be a string or a list of strings, got {type(value).__name__}")


def _infobox_value(key: str, value: Any) -> str:
    if isinstance(value, str):
        return _text(value, "infobox value of {!r}", key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return _text("; ".join(str(v) for v in value), "infobox value of {!r}", key)
    raise CorpusError(f"infobox value of {key!r} must be a string, number or list of them")


def _infobox(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, dict):
        if _ascii_strings(value):  # the usual box: valid as it is
            return dict(value)
        return {_text(k, "infobox key"): _infobox_value(k, v) for k, v in value.items()}
    if isinstance(value, str):
        box: dict[str, str] = {}
        for part in value.split(";"):
            if not part.strip():
                continue
            if ":" not in part:
                raise CorpusError(f"infobox item {part.strip()!r} has no 'key: value' colon")
            k, v = part.split(":", 1)
            box[_text(k.strip(), "infobox key")] = _text(
                v.strip(), f"infobox value of {k.strip()!r}"
            )
        return box
    raise CorpusError(
        f"infobox must be an object or a 'k: v; k: v' string, got {type(value).__name__}"
    )


def checked_date(value: Any) -> str | None:
    """A record's date as stored (ISO, day precision at most), None for none; raises CorpusError."""
    if value is None or value == "":
        return None
    if type(value) is str:  # a corpus repeats a few dates: each string is checked once
        return _checked_date_text(value)
    return _checked_date(value)


def _checked_date(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise CorpusError(f"date must be a string, got {type(value).__name__}")
    value = value.strip()
    m = _DATETIME_RE.match(value)
    if m:
        value = m.group(1)
    if len(value) > 40:  # no date is this long: say so without quoting all of it (twice)
        raise CorpusError(
            f"unparseable date {value[:20]!r}... ({len(value):,} characters): not an ISO date "
            "(YYYY, YYYY-MM or YYYY-MM-DD)"
        )
    try:
        parse_partial(value)
    except ValueError as e:
        raise CorpusError(f"unparseable date {value!r}: {e}") from None
    return value


# errors are raised, never cached
_checked_date_text = functools.lru_cache(maxsize=1 << 12)(_checked_date)


def _ascii_strings(d: Mapping[Any, Any]) -> bool:
    """Whether every key and value of `d` is an ASCII string (joined in C: a join refuses anything
    else)."""
    try:
        return "".join(d).isascii() and "".join(d.values()).isascii()
    except TypeError:
        return False


def made(cls: type[T], fields: dict[str, Any]) -> T:
    """`cls(**fields)` of a frozen dataclass (without `__slots__` or `__post_init__`), every field
    given, for values the caller has checked: without the per-field `object.__setattr__` of its
    `__init__` (a section 0.30 -> 0.2 us, a document 1.08 -> 0.4 us, a search hit 0.96 -> 0.4 us).
    The instance is as frozen to its users as one `__init__` made."""
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj


def _sections(rec: Mapping[str, Any]) -> tuple[Section, ...]:
    raw = rec.get("sections")
    if raw is None:
        text = rec.get("text", "")
        return (
            made(
                Section, {"heading": INTRO, "text": _text(text if text is not None else "", "text")}
            ),
        )
    if not isinstance(raw, list):
        raise CorpusError(f"sections must be a list, got {type(raw).__name__}")
    out = []
    for i, s in enumerate(raw):
        if not isinstance(s, dict):
            raise CorpusError(f"section {i} must be an object with heading and text")
        heading = s.get("heading")
        heading = INTRO if heading in (None, "") else _text(heading, "section {} heading", i)
        out.append(
            made(
                Section,
                {"heading": heading, "text": _text(s.get("text", ""), "section {} text", i)},
            )
        )
    return tuple(out)


def document_from_record(rec: Any, lenient: bool = False) -> Document:
    """Validate one corpus record; raises CorpusError naming what is wrong (without a file or line).
    Text under keys the format does not know (`unknown_keys`) is an error, or with `lenient` is
    kept as metadata (a section's unknown keys under metadata `section_keys`, by section number)."""
    if not isinstance(rec, dict):
        raise CorpusError(f"a record must be a JSON object, got {type(rec).__name__}")
    if not lenient:
        _refuse_unknown(rec)
    # a null id is no id
    ids = [rec[k] for k in ("id", "_id") if rec.get(k) is not None and rec.get(k) != ""]
    if not ids:
        raise CorpusError("missing id (give 'id' or '_id')")
    norm = []
    for v in ids:
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise CorpusError(f"id must be a string or an integer, got {type(v).__name__}")
        norm.append(_text(str(v), "id"))
    if len(set(norm)) > 1:
        raise CorpusError(f"'id' {norm[0]!r} and '_id' {norm[1]!r} disagree")
    title = rec.get("title")
    metadata = {k: rec[k] for k in _key_roles(rec)[1]}
    if "sections" in rec and rec.get("text") is not None:
        # kept, not indexed: the sections carry the body
        metadata["text"] = _text(rec["text"], "text")
    if lenient and isinstance(rec.get("sections"), list):
        kept = {
            str(i): {k: v for k, v in sec.items() if k not in _SECTION_KEYS}
            for i, sec in enumerate(rec["sections"])
            if isinstance(sec, dict) and any(k not in _SECTION_KEYS for k in sec)
        }
        if kept:
            metadata[KEPT_SECTION_KEYS] = kept
    # Stored as UTF-8 JSON: every value must serialise and every string be valid Unicode. ASCII
    # strings under string keys (most metadata) certainly do, without serialising them to see.
    if metadata and not _ascii_strings(metadata):
        try:
            _JSON.encode(metadata).encode()
        except UnicodeEncodeError as e:  # before ValueError, its base class
            raise CorpusError(
                f"metadata holds a lone surrogate U+{ord(e.object[e.start]):04X} (not valid "
                "Unicode text)"
            ) from None
        except (TypeError, ValueError, RecursionError):
            raise CorpusError("metadata must be JSON-serialisable") from None
    return made(
        Document,
        {
            "id": norm[0],
            "title": _text(title if title is not None else "", "title"),
            "sections": _sections(rec),
            "author": _author(rec.get("author")),
            "date": checked_date(rec.get("date")),
            "infobox": _infobox(rec.get("infobox")),
            "metadata": metadata,
        },
    )


def checked_document(
    rec: Any, file: str | None, line: int | None, lenient: bool = False
) -> Document:
    """`document_from_record`, with the error turned into a CorpusError naming file and line."""
    try:
        return document_from_record(rec, lenient)
    except CorpusError as e:
        raise CorpusError(e.message, file, line) from None
