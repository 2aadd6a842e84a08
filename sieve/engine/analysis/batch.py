"""Turning documents into analysed batches: the per-document work of indexing.

A batch holds everything the writer needs, as flat arrays and byte strings, with term ids from a
`Vocabulary` local to whoever analysed it (the writer maps them to its own). That lets worker
processes analyse in parallel while one writer assembles the index in document order.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sieve.common import jsonio
from sieve.common.isodate import first_day
from sieve.corpus.documents import INTRO, Document
from sieve.engine.analysis.analyzers import joined_bytes
from sieve.engine.analysis.fields import Field
from sieve.engine.analysis.schema import DECLARED_FIELD, NO_FIELDS, Schema
from sieve.engine.analysis.vocabulary import Vocabulary

NO_DATE = -1  # date column value of an undated document


# Documents of one corpus share few dates: each is parsed once.
_first_day = functools.lru_cache(maxsize=1 << 12)(first_day)


@dataclass
class AnalyzedBatch:
    """Consecutive documents, analysed. Per document: one entry in ids/lines/dates/units/meta_len/
    sections; per unit (title, author name, infobox value, heading, section text): unit_*; per
    section: text_len. `tokens` are local term ids; `new_terms` extend the analyser's vocabulary.
    `unit_stops`: per unit, how many of its tokens are stop words (kept for their positions only),
    when the analyzer has a stop list."""

    ids: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    dates: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    units: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # units per document
    unit_len: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    unit_field: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    unit_section: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    tokens: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    new_terms: list[str] = field(default_factory=list)
    meta: bytes = b""
    meta_len: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    text: bytes = b""
    text_len: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # sections per document
    sections: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # CorpusErrors of records left out, in line order
    errors: list[Any] = field(default_factory=list)
    kept: int = 0  # documents whose unknown keys a lenient read kept as metadata
    # each id's 16-byte digest (sieve.corpus.formats.id_key), made where the batch was analysed
    id_keys: bytes = b""
    unit_stops: np.ndarray | None = None
    # Per declared field (sieve.engine.analysis.schema),
    # one value per document: float64 for a number,
    # int32 YYYYMMDD for a date, a list of keywords for a keyword field.
    columns: list[Any] = field(default_factory=list)

    def drop(self, keep: np.ndarray) -> AnalyzedBatch:
        """The batch without the documents where `keep` is False (a duplicate id found later)."""
        unit_keep = np.repeat(keep, self.units)
        token_keep = np.repeat(unit_keep, self.unit_len)
        meta_keep = np.repeat(keep, self.meta_len)
        sec_keep = np.repeat(keep, self.sections)
        text_keep = np.repeat(sec_keep, self.text_len)
        meta = np.frombuffer(self.meta, np.uint8)[meta_keep].tobytes()
        text = np.frombuffer(self.text, np.uint8)[text_keep].tobytes()
        idx = np.flatnonzero(keep)
        return AnalyzedBatch(
            ids=[self.ids[i] for i in idx],
            lines=[self.lines[i] for i in idx],
            dates=self.dates[keep],
            units=self.units[keep],
            unit_len=self.unit_len[unit_keep],
            unit_field=self.unit_field[unit_keep],
            unit_section=self.unit_section[unit_keep],
            tokens=self.tokens[token_keep],
            new_terms=self.new_terms,
            meta=meta,
            meta_len=self.meta_len[keep],
            text=text,
            text_len=self.text_len[sec_keep],
            sections=self.sections[keep],
            errors=self.errors,
            unit_stops=None if self.unit_stops is None else self.unit_stops[unit_keep],
            columns=[
                None if c is None else c[keep] if isinstance(c, np.ndarray) else [c[i] for i in idx]
                for c in self.columns
            ],
        )


def analyze_batch(
    docs: list[Document],
    lines: list[int],
    vocab: Vocabulary,
    schema: Schema = NO_FIELDS,
    values: list[list[Any]] | None = None,
) -> AnalyzedBatch:
    """Analyse documents into one batch (one regex pass over all their units), with the values of
    `schema`'s fields: `values`, one list per document, when the
    records' check made them already."""
    texts: list[str] = []
    ufield: list[int] = []
    usection: list[int] = []
    units_per_doc: list[int] = []
    dates: list[int] = []
    metas: list[bytes] = []
    sec_text: list[str] = []
    sections_per_doc: list[int] = []
    given = values is not None
    values = values if values is not None else []
    text_fields = [i for i, (_, kind) in enumerate(schema.fields) if kind == "text"]
    title_f, author_f, box_f, heading_f, body_f = (
        int(Field.TITLE),
        int(Field.AUTHOR),
        int(Field.INFOBOX),
        int(Field.SECTION),
        int(Field.BODY),
    )
    for doc in docs:
        before = len(texts)
        texts.append(doc.title)
        ufield.append(title_f)
        usection.append(-1)
        if doc.author:
            names = [name.strip() for name in doc.author.split(";")]
            texts += names
            ufield += [author_f] * len(names)
            usection += [-1] * len(names)
        box = doc.infobox
        if box:
            texts += box.values()
            ufield += [box_f] * len(box)
            usection += [-1] * len(box)
        for j, sec in enumerate(doc.sections):
            text = sec.text
            if sec.heading != INTRO:
                texts += (sec.heading, text)
                ufield += (heading_f, body_f)
                usection += (j, j)
            else:
                texts.append(text)
                ufield.append(body_f)
                usection.append(j)
            sec_text.append(text)
        if schema:
            if not given:
                values.append(schema.values(doc.metadata))
            for i in text_fields:
                for text in values[len(units_per_doc)][i]:
                    texts.append(text)
                    ufield.append(DECLARED_FIELD)
                    usection.append(i)
        units_per_doc.append(len(texts) - before)
        sections_per_doc.append(len(doc.sections))
        dates.append(_first_day(doc.date) if doc.date else NO_DATE)
        meta: dict[str, Any] = {
            "id": doc.id,
            "title": doc.title,
            "headings": doc.headings,
            **doc.optional_fields(),
        }
        if doc.metadata:
            meta["metadata"] = dict(doc.metadata)
        metas.append(jsonio.dumps(meta))
    tokens, unit_len = vocab.ids_of(joined_bytes(texts))
    if text_fields and DECLARED_FIELD in ufield:
        # A declared text field's words go under their field's
        # namespace (sieve.engine.analysis.schema.namespaced).
        ufield_arr, usection_arr = (
            np.asarray(ufield, dtype=np.int8),
            np.asarray(usection, dtype=np.int32),
        )
        token_unit = np.repeat(np.arange(len(unit_len), dtype=np.int32), unit_len)
        for i in text_fields:
            inside = (ufield_arr[token_unit] == DECLARED_FIELD) & (usection_arr[token_unit] == i)
            if inside.any():
                uniq, back = np.unique(tokens[inside], return_inverse=True)
                tokens[inside] = vocab.namespaced_ids(uniq, i)[back]
    unit_stops = None
    if vocab.analyzer.stopwords:
        stop = vocab.stop_id
        if stop is None:
            unit_stops = np.zeros(len(unit_len), dtype=np.int32)
        else:
            unit_of = np.repeat(np.arange(len(unit_len), dtype=np.int32), unit_len)
            unit_stops = np.bincount(unit_of[tokens == stop], minlength=len(unit_len)).astype(
                np.int32
            )
    columns: list[Any] = []
    for i, (_, kind) in enumerate(schema.fields):
        col = [v[i] for v in values]
        columns.append(
            None
            if kind == "text"
            else col
            if kind == "keyword"
            else np.asarray(col, dtype=np.float64 if kind == "number" else np.int32)
        )
    return AnalyzedBatch(
        columns=columns,
        ids=[d.id for d in docs],
        lines=lines,
        dates=np.asarray(dates, dtype=np.int32),
        units=np.asarray(units_per_doc, dtype=np.int64),
        unit_len=unit_len,
        unit_field=np.asarray(ufield, dtype=np.int8),
        unit_section=np.asarray(usection, dtype=np.int32),
        tokens=tokens,
        new_terms=vocab.new_terms(),
        meta=b"".join(metas),
        meta_len=np.fromiter(map(len, metas), dtype=np.int64, count=len(metas)),
        # One encoding of all the texts; a text's byte length needs its own only if it is not ASCII.
        text="".join(sec_text).encode(),
        text_len=np.fromiter(
            (len(t) if t.isascii() else len(t.encode()) for t in sec_text),
            dtype=np.int64,
            count=len(sec_text),
        ),
        sections=np.asarray(sections_per_doc, dtype=np.int64),
        unit_stops=unit_stops,
    )
