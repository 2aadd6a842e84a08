"""Peer engines for side-by-side benchmarks: SQLite FTS5, tantivy and Lucene (benchmark only; `sieve` never imports this).

Each peer indexes sieve's JSON Lines corpus as `title`, `section` (headings other than "(intro)", joined by
"\\n"), `body` (section texts, joined by "\\n") and `date` (YYYYMMDD of the first day; absent if undated),
and renders neutral query specs (see `Spec`) into its own query language or objects, exactly, or refuses them
through `supports()`. By design of this mapping a phrase or NEAR can straddle two sections in a peer, never in
sieve (no difference on one-section corpora such as man-sections), and the analyzers fold slightly differently.

    python -m benchmarks.peers --self-test          # tiny generated corpus, counts against brute force
    python -m benchmarks.peers --build CORPUS DIR   # build the peers into DIR/<name>, print seconds / MB
    python -m benchmarks.peers --fetch-lucene       # Lucene's jars for the lucene peer (below), once

The lucene peer (Lucene 9.9.1) runs benchmarks/lucene/LucenePeer.java in a JVM: it needs a JDK (javac and
java, 11 or later; Debian's openjdk-17-jdk-headless) and Lucene's jars. No Maven repository is reachable
here, so `--fetch-lucene` takes them from PyPI: pyserini 1.6.0's source archive carries Anserini's fat jar
(Lucene 9.9.1 and Jackson, compiled for Java 11), which is extracted to benchmarks/work/lucene-jar/.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
import unicodedata
from pathlib import Path
from typing import Any, Iterator, Protocol

import tantivy

# {"op": "term"|"phrase"|"prefix"|"near"|"date"|"and"|"or"|"not", ...}; field None = title|section|body.
Spec = dict[str, Any]
FIELDS = ("title", "section", "body")
_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?")


def date_int(value: Any) -> int | None:
    """YYYYMMDD of the first day of an ISO partial date ("2018" -> 20180101), None if undated."""
    m = _DATE.match(str(value)) if value not in (None, "") else None
    return int(m[1]) * 10000 + int(m[2] or 1) * 100 + int(m[3] or 1) if m else None


def read_corpus(path: Path) -> Iterator[dict[str, Any]]:
    """The corpus as peer documents: {"id", "title", "section", "body", "date"}."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            secs = rec.get("sections") or [{"heading": "(intro)", "text": rec.get("text", "")}]
            yield {
                "id": str(rec["id"]),
                "title": rec.get("title") or "",
                "section": "\n".join(s.get("heading", "") for s in secs if s.get("heading", "(intro)") != "(intro)"),
                "body": "\n".join(s.get("text", "") for s in secs),
                "date": date_int(rec.get("date")),
            }


def dir_mb(path: Path) -> float:
    """Size of the files under `path`, in MiB."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


class Peer(Protocol):
    name: str

    def build(self, corpus: Path, workdir: Path) -> dict: ...
    def open(self, workdir: Path) -> None: ...
    def count(self, spec: Spec) -> int: ...
    def supports(self, spec: Spec) -> bool: ...
    def bm25_top(self, terms: list[str], k: int) -> list[tuple[str, float]]: ...


OPS = ("term", "phrase", "prefix", "near", "date", "and", "or", "not")


def every_op_known(spec: Spec) -> bool:
    """Whether every node of `spec` is one of the ops (what tantivy and Lucene express exactly)."""
    return all(s["op"] in OPS for s in _walk(spec))


def _walk(spec: Spec) -> Iterator[Spec]:
    yield spec
    for c in spec.get("children", [spec["child"]] if "child" in spec else []):
        yield from _walk(c)


def ensure(peer: Peer, corpus: Path, workdir: Path) -> dict:
    """Open the peer's index in `workdir`, building it first unless one from this very corpus file is there."""
    stamp = {"corpus": str(corpus.resolve()), "size": corpus.stat().st_size, "mtime_ns": corpus.stat().st_mtime_ns}
    meta = workdir / peer.name / "build.json"
    if meta.exists() and (old := json.loads(meta.read_text())).get("stamp") == stamp:
        peer.open(workdir)
        return old["stats"]
    stats = peer.build(corpus, workdir)
    meta.write_text(json.dumps({"stamp": stamp, "stats": stats}))
    return stats


class SqlitePeer:
    """SQLite FTS5, contentless (`content=''`: index only, like tantivy without stored text).

    `fts(title, section, body)` holds the text; `docs(rowid, id, date)` holds the id and an indexed date,
    joined by rowid. A pure-text subtree becomes one FTS5 MATCH expression (FTS5's binary NOT needs a
    positive operand); dates, other NOTs and ORs over those become SQL over rowids (UNION, [NOT] IN).
    Inexpressible: NEAR of a word with itself at n > 1 (FTS5 lets one occurrence satisfy both phrases).
    """

    name = "sqlite-fts5"

    def build(self, corpus: Path, workdir: Path) -> dict:
        t0 = time.perf_counter()
        db = sqlite3.connect(_fresh(workdir / self.name) / "index.sqlite")
        db.executescript("""
            PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -262144;
            CREATE TABLE docs(rowid INTEGER PRIMARY KEY, id TEXT NOT NULL, date INTEGER);
            CREATE VIRTUAL TABLE fts USING fts5(title, section, body, content='',
                                                tokenize = "unicode61 remove_diacritics 2");""")
        n, batch = 0, []
        for n, d in enumerate(read_corpus(corpus), 1):
            batch.append((n, d["id"], d["date"], d["title"], d["section"], d["body"]))
            if len(batch) == 5000:
                self._insert(db, batch)
        self._insert(db, batch)
        # Index the dates after loading (one sort, not 100k b-tree inserts); merge FTS5's b-trees into one.
        db.executescript("CREATE INDEX docs_date ON docs(date); INSERT INTO fts(fts) VALUES ('optimize'); ANALYZE;")
        db.commit()
        db.close()
        self.open(workdir)
        return {"seconds": time.perf_counter() - t0, "documents": n, "index_mb": dir_mb(workdir / self.name)}

    @staticmethod
    def _insert(db: sqlite3.Connection, batch: list[tuple]) -> None:
        db.executemany("INSERT INTO docs VALUES (?, ?, ?)", [b[:3] for b in batch])
        db.executemany("INSERT INTO fts(rowid, title, section, body) VALUES (?, ?, ?, ?)",
                       [(b[0], *b[3:]) for b in batch])
        batch.clear()

    def open(self, workdir: Path) -> None:
        self.db = sqlite3.connect((workdir / self.name / "index.sqlite").resolve().as_uri() + "?mode=ro", uri=True)

    def supports(self, spec: Spec) -> bool:
        return not any(s["op"] == "near" and s["a"] == s["b"] and s["n"] > 1 for s in _walk(spec))

    def count(self, spec: Spec) -> int:
        m = self._match(spec)
        if m is not None:
            return self.db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (m,)).fetchone()[0]
        sql, params = self._rows(spec)
        return self.db.execute(f"SELECT count(*) FROM ({sql})", params).fetchone()[0]

    def bm25_top(self, terms: list[str], k: int) -> list[tuple[str, float]]:
        # FTS5's bm25() is negative (smaller = better) and sees the three columns as one weighted document.
        rows = self.db.execute(
            "SELECT d.id, -r.rank FROM (SELECT rowid, rank FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?) r"
            " JOIN docs d ON d.rowid = r.rowid ORDER BY r.rank", (" OR ".join(map(_q, terms)), k))
        return [(i, float(s)) for i, s in rows]

    def _match(self, s: Spec) -> str | None:
        """The FTS5 expression for `s`, or None if it needs the docs table (dates, bare NOT)."""
        col = f"{s['field']} : " if s.get("field") else ""
        op = s["op"]
        if op == "term":
            return col + _q(s["term"])
        if op == "phrase":
            return col + _q(" ".join(s["terms"]))  # FTS5 tokenises a quoted string into a phrase
        if op == "prefix":
            return col + _q(s["stem"]) + "*"
        if op == "near":  # FTS5 counts the tokens *between* the two phrases: within n positions = n - 1
            return f"NEAR({_q(s['a'])} {_q(s['b'])}, {s['n'] - 1})" if s["a"] != s["b"] else _q(f"{s['a']} {s['a']}")
        if op == "or":
            parts = [self._match(c) for c in s["children"]]
            return None if None in parts else "(" + " OR ".join(f"({p})" for p in parts) + ")"
        if op == "and":
            pos = [self._match(c) for c in s["children"] if c["op"] != "not"]
            neg = [self._match(c["child"]) for c in s["children"] if c["op"] == "not"]
            if not pos or None in pos or None in neg:
                return None
            expr = "(" + " AND ".join(f"({p})" for p in pos) + ")"
            return expr + (" NOT (" + " OR ".join(f"({n})" for n in neg) + ")" if neg else "")
        return None  # date, not

    def _rows(self, s: Spec) -> tuple[str, list]:
        """A SELECT of the rowids matching `s`, for any subtree."""
        m = self._match(s)
        if m is not None:
            return "SELECT rowid FROM fts WHERE fts MATCH ?", [m]
        if s["op"] == "or":
            parts = [self._rows(c) for c in s["children"]]
            return " UNION ".join(f"SELECT rowid FROM ({q})" for q, _ in parts), [x for _, p in parts for x in p]
        # AND (a date or a bare NOT is an AND of one): the text operands as one MATCH, the dates as WHERE
        # on docs, the rest as [NOT] IN sub-selects (measured much faster than INTERSECT / EXCEPT).
        kids = s["children"] if s["op"] == "and" else [s]
        text = [c for c in kids if c["op"] != "not" and self._match(c) is not None]
        text += [c for c in kids if text and c["op"] == "not" and self._match(c["child"]) is not None]
        dates = [c for c in kids if c["op"] == "date"]
        rid, where, params = ("fts.rowid" if text else "rowid"), [], []
        for c in kids:
            if c["op"] == "date":
                w, p = _date_where(c)
            elif c not in text:
                q, p = self._rows(c["child"] if c["op"] == "not" else c)
                w = f"{rid} {'NOT IN' if c['op'] == 'not' else 'IN'} ({q})"
            else:
                continue
            where.append(w)
            params += p
        if not text:
            return "SELECT rowid FROM docs WHERE " + (" AND ".join(where) or "1"), params
        src = "fts JOIN docs ON docs.rowid = fts.rowid" if dates else "fts"
        params.insert(0, self._match({"op": "and", "children": text}))
        return f"SELECT {rid} FROM {src} WHERE " + " AND ".join(["fts MATCH ?"] + where), params


def _q(text: str) -> str:
    """An FTS5 string literal (a bareword could be read as AND/OR/NOT/NEAR or hit the bareword charset)."""
    return '"' + text.replace('"', '""') + '"'


def _date_where(s: Spec) -> tuple[str, list]:
    conds = ["date IS NOT NULL"] + [f"date {o} ?" for o, v in ((">=", s["lo"]), ("<=", s["hi"])) if v is not None]
    return " AND ".join(conds), [v for v in (s["lo"], s["hi"]) if v is not None]


class TantivyPeer:
    """tantivy via tantivy-py, with query objects (no query parser, so nothing needs escaping).

    Analyzer "sieve": simple tokenizer (split on non-alphanumeric) + lowercase + ASCII folding, without the
    default's 40-character limit. Date: an indexed + fast i64 field. Everything in the spec is expressible:
    NEAR(a, b, n) = slop-(n-1) phrases "a b" OR "b a" (tantivy's slop is Lucene-like: within n either way
    after the union), and NEAR(a, a, n) = OR of the exact-offset phrases (0:a, k:a), k = 1..n, because a
    sloppy "a a" matches a single occurrence. Writer: num_threads=1 (segment merges still run in
    tantivy's background merge threads).
    """

    name = "tantivy"

    def __init__(self) -> None:
        b = tantivy.SchemaBuilder()
        b.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
        for f in FIELDS:
            b.add_text_field(f, tokenizer_name="sieve")
        b.add_integer_field("date", indexed=True, fast=True)
        b.add_unsigned_field("n", fast=True)  # every doc has one: count() aggregates over it
        self.schema = b.build()

    def _index(self, path: Path, create: bool) -> tantivy.Index:
        ix = tantivy.Index(self.schema, str(path), reuse=False) if create else tantivy.Index.open(str(path))
        ix.register_tokenizer("sieve", tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
                              .filter(tantivy.Filter.lowercase()).filter(tantivy.Filter.ascii_fold()).build())
        return ix

    def build(self, corpus: Path, workdir: Path) -> dict:
        t0 = time.perf_counter()
        ix = self._index(_fresh(workdir / self.name), create=True)
        w = ix.writer(heap_size=1_000_000_000, num_threads=1)
        n = 0
        for n, d in enumerate(read_corpus(corpus), 1):  # JSON parsing: ~2.2 s of it on man-sections
            doc = tantivy.Document(id=d["id"], title=d["title"], section=d["section"], body=d["body"])
            doc.add_unsigned("n", n)
            if d["date"] is not None:
                doc.add_integer("date", d["date"])
            w.add_document(doc)
        w.commit()
        w.wait_merging_threads()  # what the merge policy leaves: one segment on man-sections
        self.open(workdir)
        return {"seconds": time.perf_counter() - t0, "documents": n, "index_mb": dir_mb(workdir / self.name),
                "segments": self.searcher.num_segments}

    def open(self, workdir: Path) -> None:
        self.searcher = self._index(workdir / self.name, create=False).searcher()

    def supports(self, spec: Spec) -> bool:
        return every_op_known(spec)

    def count(self, spec: Spec) -> int:
        # A value_count aggregation over `n` (one value per document) is exact and needs no scoring; on
        # man-sections it measured faster than search(limit=1, count=True), scored or ordered by `n`.
        agg = self.searcher.aggregate(self._query(spec), {"c": {"value_count": {"field": "n"}}})
        return int(agg["c"]["value"])

    def bm25_top(self, terms: list[str], k: int) -> list[tuple[str, float]]:
        Q, O = tantivy.Query, tantivy.Occur
        q = Q.boolean_query([(O.Should, Q.term_query(self.schema, f, t)) for t in terms for f in FIELDS])
        hits = self.searcher.search(q, limit=k, count=False).hits
        return [(self.searcher.doc(a).get_first("id"), float(s)) for s, a in hits]

    def _query(self, s: Spec) -> tantivy.Query:
        Q, O, op = tantivy.Query, tantivy.Occur, s["op"]
        fields = [s["field"]] if s.get("field") else FIELDS

        def any_field(make: Any) -> tantivy.Query:
            qs = [make(f) for f in fields]
            return qs[0] if len(qs) == 1 else Q.boolean_query([(O.Should, q) for q in qs])

        if op == "term" or (op == "phrase" and len(s["terms"]) == 1):
            term = s["term"] if op == "term" else s["terms"][0]
            return any_field(lambda f: Q.term_query(self.schema, f, term))
        if op == "phrase":
            return any_field(lambda f: Q.phrase_query(self.schema, f, s["terms"]))
        if op == "prefix":  # a regex over the term dictionary expands every term; phrase_prefix caps expansions
            return any_field(lambda f: Q.regex_query(self.schema, f, re.escape(s["stem"]) + ".*"))
        if op == "near":
            a, b, n = s["a"], s["b"], s["n"]
            if a == b:
                phrases = [lambda f, k=k: Q.phrase_query(self.schema, f, [(0, a), (k, a)]) for k in range(1, n + 1)]
            else:
                phrases = [lambda f, w=w: Q.phrase_query(self.schema, f, w, n - 1) for w in ([a, b], [b, a])]
            return Q.boolean_query([(O.Should, p(f)) for p in phrases for f in fields])
        if op == "date":
            if s["lo"] is None and s["hi"] is None:
                return Q.exists_query("date")
            return Q.range_query(self.schema, "date", tantivy.FieldType.Integer, s["lo"], s["hi"])
        if op == "or":
            return Q.boolean_query([(O.Should, self._query(c)) for c in s["children"]])
        kids = s["children"] if op == "and" else [s]  # a bare "not" = all documents AND NOT child
        clauses = [(O.MustNot, self._query(c["child"])) if c["op"] == "not" else (O.Must, self._query(c))
                   for c in kids]
        if all(o == O.MustNot for o, _ in clauses):  # tantivy matches nothing for MustNot-only queries
            clauses.append((O.Must, Q.all_query()))
        return Q.boolean_query(clauses)


HERE = Path(__file__).resolve().parent
LUCENE_DIR = HERE / "work" / "lucene-jar"  # not work/lucene: the lucene index of the default --work goes there
LUCENE_SOURCE = HERE / "lucene" / "LucenePeer.java"
LUCENE_JAR = "anserini-1.7.1-fatjar.jar"  # inside pyserini 1.6.0's sdist: Lucene 9.9.1
PYSERINI = "pyserini==1.6.0"


def fetch_lucene() -> Path:
    """Lucene's jars (Anserini's fat jar, from pyserini's source archive on PyPI) in LUCENE_DIR."""
    jar = LUCENE_DIR / LUCENE_JAR
    if jar.exists():
        return jar
    LUCENE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", PYSERINI, "-d", tmp], check=True)
        (archive,) = Path(tmp).glob("pyserini-*.tar.gz")
        with tarfile.open(archive) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("/" + LUCENE_JAR))
            with tar.extractfile(member) as src, open(jar, "wb") as dst:  # type: ignore[union-attr]
                shutil.copyfileobj(src, dst)
    return jar


def _lucene_classpath() -> str:
    """The classpath of the compiled peer (compiled again when its source is newer)."""
    jar = LUCENE_DIR / LUCENE_JAR
    if not jar.exists():
        raise RuntimeError(f"no Lucene jar at {jar}: run `python -m benchmarks.peers --fetch-lucene` (needs a JDK too)")
    classes = LUCENE_DIR / "classes"
    built = classes / "LucenePeer.class"
    if not built.exists() or built.stat().st_mtime < LUCENE_SOURCE.stat().st_mtime:
        classes.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-cp", str(jar), "-d", str(classes), str(LUCENE_SOURCE)], check=True)
    return f"{jar}:{classes}"


class LucenePeer:
    """Lucene 9.9.1 in a JVM (benchmarks/lucene/LucenePeer.java), answering over a pipe.

    Analysis as the tantivy peer's (letters and digits, lower case, ASCII folding), queries built from the
    same specs (NEAR as sloppy phrases both ways, NEAR of a word with itself as exact-offset phrases), date
    as an IntPoint, BM25 with sieve's k1 0.9 and b 0.4. The build is one indexing thread with a 1 GB buffer
    (merges in Lucene's background threads, as tantivy's). `last_ms` is the time Lucene took inside the JVM
    for the last request (the pipe is not counted), which the benchmarks report; the JVM is warmed up on
    the index's own words first, as a JIT needs, and its query cache is off (each query runs once).
    """

    name = "lucene"
    WARM_QUERIES = 3000

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.last_ms: float | None = None

    def build(self, corpus: Path, workdir: Path) -> dict:
        cp = _lucene_classpath()
        t0 = time.perf_counter()
        out = subprocess.run(["java", "-cp", cp, "LucenePeer", "build", str(corpus), str(_fresh(workdir / self.name))],
                             check=True, capture_output=True, text=True).stdout
        wall = time.perf_counter() - t0
        inner = json.loads(out.strip().splitlines()[-1])
        self.open(workdir)
        # `seconds`: the whole run, JVM start included, as the other peers' builds count their start-up.
        return {"seconds": wall, "seconds_in_jvm": inner["seconds"], "documents": inner["documents"],
                "index_mb": dir_mb(workdir / self.name)}

    def open(self, workdir: Path) -> None:
        self.close()
        self.proc = subprocess.Popen(["java", "-cp", _lucene_classpath(), "LucenePeer", "serve", str(workdir / self.name)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")
        self._ask({"cmd": "warm", "queries": self.WARM_QUERIES})

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(timeout=30)
            self.proc = None

    def _ask(self, req: dict) -> dict:
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        res = json.loads(self.proc.stdout.readline())
        if "error" in res:
            raise RuntimeError(f"lucene peer: {res['error']} for {req}")
        self.last_ms = res["ns"] / 1e6 if "ns" in res else None
        return res

    def supports(self, spec: Spec) -> bool:
        return every_op_known(spec)

    def count(self, spec: Spec) -> int:
        return int(self._ask({"cmd": "count", "spec": spec})["count"])

    def bm25_top(self, terms: list[str], k: int) -> list[tuple[str, float]]:
        return [(str(i), float(s)) for i, s in self._ask({"cmd": "bm25", "terms": terms, "k": k})["hits"]]


def latency_ms(peer: Any, wall_ms: float) -> float:
    """A peer's latency for the request just timed: its own measure where it reports one (a JVM
    behind a pipe), else the wall time around the call."""
    own = getattr(peer, "last_ms", None)
    return own if own is not None else wall_ms


PEERS: dict[str, type] = {"sqlite-fts5": SqlitePeer, "tantivy": TantivyPeer, "lucene": LucenePeer}


# ---- self-test: a tiny generated corpus, peer counts against a brute-force evaluation of the spec ----

def _tokens(text: str) -> list[str]:
    folded = unicodedata.normalize("NFD", text.casefold())
    return re.findall(r"[^\W_]+", "".join(c for c in folded if not unicodedata.combining(c)))


def _brute(doc: dict, s: Spec) -> bool:
    """Whether `s` matches `doc` (its fields already tokenised), straight from the spec's definition."""
    op, toks = s["op"], [doc[s["field"]]] if s.get("field") else [doc[f] for f in FIELDS]
    if op in ("and", "or"):
        return (all if op == "and" else any)(_brute(doc, c) for c in s["children"])
    if op == "not":
        return not _brute(doc, s["child"])
    if op == "date":
        d = doc["date"]
        return d is not None and (s["lo"] is None or d >= s["lo"]) and (s["hi"] is None or d <= s["hi"])
    if op == "near":
        return any(x == s["a"] and y == s["b"] and i != j and abs(i - j) <= s["n"]
                   for t in toks for i, x in enumerate(t) for j, y in enumerate(t))
    terms = {"term": [s.get("term")], "phrase": s.get("terms")}.get(op)
    if terms is None:  # prefix
        return any(w.startswith(s["stem"]) for t in toks for w in t)
    return any(t[i:i + len(terms)] == terms for t in toks for i in range(len(t)))


_VOCAB = "socket file descriptor open read write Zürich O_RDONLY fd sock".split()
_TOKENS = sorted({t for w in _VOCAB for t in _tokens(w)})


def _tiny_corpus(path: Path, rnd: random.Random, n: int = 400) -> None:
    """Random documents over a small vocabulary: 1-3 sections, some "(intro)", some flat, 3/4 dated."""
    words = lambda k: " ".join(rnd.choice(_VOCAB) for _ in range(rnd.randint(1, k)))  # noqa: E731
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            rec: dict[str, Any] = {"id": f"d{i}", "title": words(3)}
            if i % 5 == 0:
                rec["text"] = words(12)
            else:
                rec["sections"] = [{"heading": rnd.choice(["(intro)", words(2)]), "text": words(10)}
                                   for _ in range(rnd.randint(1, 3))]
            if i % 4:
                rec["date"] = rnd.choice(["2017", "2018-05", "2019-02-28", "2023-12-31", "2024-01-01"])
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


def _random_spec(rnd: random.Random, depth: int = 0) -> Spec:
    """A random spec: any leaf, or AND / OR / NOT (NOT also outside AND) up to two levels deep."""
    w, f = (lambda: rnd.choice(_TOKENS)), (lambda: rnd.choice([None, *FIELDS]))  # noqa: E731
    op = rnd.choice(["term", "phrase", "prefix", "near", "date"] + ["and", "or", "not"] * (depth < 2) * 2)
    if op in ("and", "or"):
        return {"op": op, "children": [_random_spec(rnd, depth + 1) for _ in range(rnd.randint(2, 3))]}
    return {"not": lambda: {"op": op, "child": _random_spec(rnd, depth + 1)},
            "term": lambda: {"op": op, "term": w(), "field": f()},
            "phrase": lambda: {"op": op, "terms": [w() for _ in range(rnd.randint(1, 3))], "field": f()},
            "prefix": lambda: {"op": op, "stem": w()[:rnd.randint(1, 3)], "field": f()},
            "near": lambda: {"op": op, "a": w(), "b": w(), "n": rnd.randint(1, 4)},
            "date": lambda: {"op": op, "lo": rnd.choice([None, 20180101, 20190228]),
                             "hi": rnd.choice([None, 20180501, 20231231])}}[op]()


def self_test(n_random: int = 300, names: list[str] | None = None) -> None:
    """The peers on a tiny corpus: every spec they support counts exactly what brute force counts."""
    rnd = random.Random(7)
    T = lambda t, f=None: {"op": "term", "term": t, "field": f}  # noqa: E731
    fixed = [T("zurich"), T("rdonly", "title"), {"op": "and", "children": [T("open"), T("file", "title")]},
             {"op": "or", "children": [T("read", "title"), T("write", "section")]},
             {"op": "and", "children": [T("open"), {"op": "not", "child": T("read")}]},
             {"op": "not", "child": T("socket")}, {"op": "phrase", "terms": ["o", "rdonly"], "field": "body"},
             {"op": "prefix", "stem": "sock", "field": None}, {"op": "date", "lo": 20180101, "hi": 20231231},
             {"op": "near", "a": "open", "b": "file", "n": 3}, {"op": "near", "a": "read", "b": "read", "n": 1}]
    specs = fixed + [_random_spec(rnd) for _ in range(n_random)]
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "tiny.jsonl"
        _tiny_corpus(corpus, rnd)
        docs = [{**d, **{f: _tokens(d[f]) for f in FIELDS}} for d in read_corpus(corpus)]
        for cls in (PEERS[n] for n in names) if names else PEERS.values():
            peer = cls()
            assert peer.build(corpus, Path(tmp))["documents"] == len(docs)
            ok = [s for s in specs if peer.supports(s)]
            assert all(peer.supports(s) for s in fixed), peer.name
            for s in ok:
                got, want = peer.count(s), sum(_brute(d, s) for d in docs)
                assert got == want, f"{peer.name}: {s} -> {got}, brute force {want}"
            top = peer.bm25_top(["socket", "zurich"], 5)
            assert len(top) == 5 and all(x[1] >= y[1] for x, y in zip(top, top[1:])), top
            print(f"{peer.name}: {len(ok)}/{len(specs)} specs supported, all agree with brute force")
            if hasattr(peer, "close"):
                peer.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--build", nargs=2, metavar=("CORPUS", "WORKDIR"), type=Path)
    ap.add_argument("--peer", action="append", choices=sorted(PEERS), help="only these peers (default: all)")
    ap.add_argument("--fetch-lucene", action="store_true")
    args = ap.parse_args(argv)
    if args.fetch_lucene:
        print(fetch_lucene())
    if args.self_test:
        self_test(names=args.peer)
    for name, cls in (((n, PEERS[n]) for n in args.peer) if args.peer else PEERS.items()) if args.build else ():
        print(name, json.dumps(cls().build(*args.build)), flush=True)


if __name__ == "__main__":
    main()
