"""`sieve web`: explore indexes in a browser, as the agent sees them.

A Starlette app with server-side Jinja2 templates and no JavaScript: a BQL search box (the canonical
form shown, a syntax error with a caret under its position, a zero-hit query's one-step changes that
would admit documents), result cards like the agent's (matched headings highlighted, a long list
folded behind a <details> toggle, snippet with Markdown emphasis rendered, fields, date, infobox
keys), a heading opens that section, a document view with its outline beside the text. Read-only:
the browser names an index by its served name and a document by its id, never a file, and no page or
error shows a server path; every page is escaped (documents are untrusted text) and sent with a
policy that forbids scripts; the same limits as `sieve serve` (results, query length, time per
request). A bad parameter is a 4xx page that says what is wrong. Requests for another Host, or from
a page of another origin, are refused (sieve.serve.hosts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sieve.engine import deadline
from sieve.engine.rank.rankers import RANKERS
from sieve.errors import (
    BQLLimitError,
    BQLSyntaxError,
    DeadlineExceededError,
    IndexDirectoryError,
    SieveError,
    UnknownDocumentError,
    extra_hint,
)
from sieve.index.index import Index, Limits
from sieve.serve.hosts import HostPolicy, guarded, html_page
from sieve.serve.service import without_paths
from sieve.tools.cards import RELAXATIONS_SHOWN, CardConfig, declared_values, hit_meta, hit_snippet
from sieve.tools.fetch.snippets import Matcher
from sieve.web.text import number, rendered

if TYPE_CHECKING:
    from sieve.web.runs import LoadedRun

TEMPLATES = Path(__file__).resolve().parent / "templates"
# No script may run, whatever a document holds; styles are the page's own.
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
# A card shows the headings its query matched (at most MATCHED_SHOWN) and the first FIRST_SHOWN;
# the rest wait behind a "more" toggle, unless there are too few of them to be worth one.
FIRST_SHOWN = 5
MATCHED_SHOWN = 12
FEW_ENOUGH = 3


class _Refused(Exception):
    """A request the app does not answer as asked (an unknown name, a bad parameter): carries the
    4xx page to send instead."""

    def __init__(self, response: Any) -> None:
        self.response = response


def _shown(value: str) -> str:
    """A parameter's value as an error message quotes it: repr, cut to a readable length."""
    return repr(value) if len(value) <= 60 else repr(value[:60]) + "..."


def _whole(raw: str, lo: int, hi: int) -> int | None:
    """`raw` as a whole number in [lo, hi]: ASCII digits only (`int` also reads '²', '٣' and
    '1_000'), few enough that a huge one is refused before it is converted."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 12:
        return None
    n = int(raw)
    return n if lo <= n <= hi else None


@dataclass(frozen=True)
class WebLimits:
    """What one page may ask: results per search, query characters, seconds of engine time."""

    k_max: int = 50
    max_query_chars: int = Limits.max_query_chars  # the engine's default
    request_seconds: float = 10.0


@dataclass
class Card:
    rank: int
    doc_id: str
    title: str
    score: float
    meta: list[str]
    headings: list[tuple[int, str, bool]]  # (section number, heading, matched): shown at once
    more_headings: list[tuple[int, str, bool]]  # the same, behind the "more" toggle
    infobox_keys: list[str]
    fields: list[str]
    snippet_heading: str | None
    snippet: Any  # safe HTML (sieve.web.text.rendered): emphasis rendered, query words marked


def split_headings(count: int, matched: set[int]) -> tuple[list[int], list[int]]:
    """The section numbers a card shows at once (the first matched ones and the first few, in
    document order) and those behind its "more" toggle."""
    shown = set(sorted(matched)[:MATCHED_SHOWN]) | set(range(min(count, FIRST_SHOWN)))
    if count - len(shown) <= FEW_ENOUGH:
        return list(range(count)), []
    return sorted(shown), [j for j in range(count) if j not in shown]


def _cards(index: Index, results: Any, markup: Callable[[str], Any]) -> list[Card]:
    """The results as cards; `markup` marks a string of HTML as safe for the templates."""
    matcher = Matcher.of(results)
    is_hit = (lambda word: bool(matcher.hits(word))) if matcher else None
    out = []
    for hit in results.hits:
        stored = hit_meta(index, hit)  # the stored record: no section is read but the snippet's
        headings: list[str] = stored["headings"]
        matched = set(hit.matched_sections(headings))
        snip = hit_snippet(index, hit, headings, matcher, CardConfig())
        meta = [
            x
            for x in (
                stored.get("date"),
                f"by {stored['author']}" if stored.get("author") else None,
            )
            if x
        ]
        meta += [
            f"{name} {value}"
            for name, value in declared_values(index, stored.get("metadata") or {})
        ]
        at_once, later = (
            [(j, headings[j], j in matched) for j in part]
            for part in split_headings(len(headings), matched)
        )
        out.append(
            Card(
                hit.rank,
                hit.doc_id,
                stored["title"],
                hit.score,
                meta,
                at_once,
                later,
                list(stored.get("infobox") or {}),
                list(hit.fields),
                headings[snip.section] if snip else None,
                markup(rendered(snip.text, is_hit)) if snip else None,
            )
        )
    return out


def check_extra() -> None:
    """Nothing if the web extra's packages import; else the SieveError that names the one missing
    and the command that installs the extra (`sieve web` asks before it announces its address)."""
    try:
        import jinja2  # noqa: F401  # imported only to see that it is installed
        import starlette.applications  # noqa: F401  # imported only to see that it is installed
        import uvicorn  # noqa: F401  # imported only to see that it is installed
    except ImportError as e:
        raise _without_extra(e) from None


def _without_extra(e: ImportError) -> SieveError:
    return SieveError(f"sieve web needs the web extra ({e.name} is missing): {extra_hint('web')}")


def create_app(
    indexes: Mapping[str, Index],
    limits: WebLimits = WebLimits(),
    runs: Mapping[str, LoadedRun] | None = None,
    hosts: HostPolicy = HostPolicy(),
) -> Any:
    """The ASGI app serving `indexes` and `runs` (eval run folders, sieve.web.runs) by name
    (read-only), to requests addressed to one of `hosts`' names from no page of another origin."""
    try:
        from jinja2 import Environment, FileSystemLoader, select_autoescape
        from markupsafe import Markup
        from starlette.applications import Starlette
        from starlette.exceptions import HTTPException
        from starlette.requests import Request
        from starlette.responses import FileResponse, HTMLResponse
        from starlette.routing import Route
    except ImportError as e:  # pragma: no cover - the web extra
        raise _without_extra(e) from None

    runs = dict(runs or {})
    if not indexes and not runs:
        raise SieveError("sieve web needs an index or a run to show")
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["number"] = number
    # `rendered` escapes every character of the text: the only tags are its own.
    env.filters["emphasis"] = lambda text: Markup(rendered(text))
    names = list(indexes)
    default_k = min(10, limits.k_max)
    places = {
        name: Path(ix.path) for name, ix in indexes.items() if getattr(ix, "path", None) is not None
    }
    places.update({f"run {name}": run.run.dir for name, run in runs.items()})

    def public(message: str) -> str:
        return without_paths(message, places)

    def page(template: str, status: int = 200, **values: Any) -> HTMLResponse:
        html = env.get_template(template).render(
            names=names, run_names=list(runs), rankers=list(RANKERS), limits=limits, **values
        )
        return HTMLResponse(html, status_code=status, headers=HEADERS)

    def missing(what: str, status: int = 404) -> HTMLResponse:
        return page("error.html", status, message=what, index=names[0] if names else "")

    def chosen(request: Request) -> tuple[str, Index]:
        """The index a page asks for (the first by default); a 404 page, raised, for any other
        name."""
        name = request.query_params.get("index") or (names[0] if names else "")
        if name not in indexes:
            served = (
                f"this server has {', '.join(names)}" if names else "this server shows runs only"
            )
            raise _Refused(missing(f"no index named {_shown(name)}; {served}"))
        return name, indexes[name]

    def home(request: Request) -> HTMLResponse:
        if not names:
            return runs_page(request)
        return page(
            "search.html",
            index=names[0],
            query="",
            ranker="bm25",
            k=default_k,
            documents={n: len(ix) for n, ix in indexes.items()},
        )

    def runs_page(request: Request) -> HTMLResponse:
        return page("runs.html", runs=runs)

    def run_page(request: Request) -> HTMLResponse:
        run = runs.get(request.query_params.get("name", ""))
        if run is None:
            return missing("no such run")
        return page("run.html", run=run)

    def episode_page(request: Request) -> HTMLResponse:
        run = runs.get(request.query_params.get("run", ""))
        q = request.query_params.get("q", "")
        if run is None or run.episode(q) is None:
            return missing("no such run or question")
        shown = [(run, run.episode(q))]
        other = request.query_params.get("vs")
        if other:
            if other not in runs or runs[other].episode(q) is None:
                return missing(f"run {_shown(other)} has no question {_shown(q)}")
            shown.append((runs[other], runs[other].episode(q)))
        return page(
            "episode.html",
            shown=shown,
            q=q,
            others=[n for n in runs if n != run.name and runs[n].episode(q) is not None],
        )

    def figure(request: Request) -> Any:
        run = runs.get(request.query_params.get("run", ""))
        path = run.figure(request.query_params.get("name", "")) if run is not None else None
        if path is None or not path.is_file():
            return missing("no such figure")
        return FileResponse(path, media_type="image/png", headers=HEADERS)

    def search(request: Request) -> HTMLResponse:
        name, index = chosen(request)
        query = request.query_params.get("q", "")
        ranker = request.query_params.get("ranker", "bm25")
        raw_k = request.query_params.get("k", str(default_k))
        k = _whole(raw_k, 1, limits.k_max)
        values: dict[str, Any] = {
            "index": name,
            "query": query,
            "ranker": ranker if ranker in RANKERS else "bm25",
            "k": k or default_k,
        }
        if ranker not in RANKERS:
            return page(
                "search.html",
                400,
                **values,
                error=f"no ranker named {_shown(ranker)}; choose {', '.join(RANKERS)}",
            )
        if k is None:
            return page(
                "search.html",
                400,
                **values,
                error="k (results) must be a whole number "
                f"from 1 to {limits.k_max}, got {_shown(raw_k)}",
            )
        if not query.strip():
            return page(
                "search.html", **values, documents={n: len(ix) for n, ix in indexes.items()}
            )
        if len(query) > limits.max_query_chars:
            return page(
                "search.html",
                400,
                **values,
                error=(
                    f"the query has {len(query):,} characters; at most {limits.max_query_chars:,}"
                ),
            )
        try:
            with deadline.within(limits.request_seconds):
                results = index.search(query, k=k, ranker=values["ranker"])
                cards = _cards(index, results, Markup)
        except BQLSyntaxError as e:
            pointer = e.pointer(query)
            return page("search.html", 400, **values, error=e.message, hint=e.hint, pointer=pointer)
        except BQLLimitError as e:
            return page("search.html", 400, **values, error=str(e))
        # the query asked too much (the page's or the index's budget): the asker's to narrow
        except DeadlineExceededError as e:
            return page("search.html", 400, **values, error=str(e))
        except IndexDirectoryError as e:
            return page("search.html", 500, **values, error=public(str(e)))
        except SieveError as e:
            return page("search.html", 400, **values, error=public(str(e)))
        relaxations = results.diagnosis.relaxations[:RELAXATIONS_SHOWN] if results.diagnosis else ()
        return page("search.html", **values, results=results, cards=cards, relaxations=relaxations)

    def document(request: Request) -> HTMLResponse:
        name, index = chosen(request)
        doc_id = request.query_params.get("id", "")
        try:
            doc = index.document(doc_id)
        except UnknownDocumentError:
            return page(
                "error.html", 404, message=f"no document {_shown(doc_id)} in {name}", index=name
            )
        except SieveError as e:  # damage: the server's problem, told without its paths
            return page(
                "error.html",
                500 if isinstance(e, IndexDirectoryError) else 400,
                message=public(str(e)),
                index=name,
            )
        raw = request.query_params.get("section")
        section = None
        if raw is not None:
            section = _whole(raw, 0, len(doc.sections) - 1)
            if section is None:
                return page(
                    "error.html",
                    404,
                    message=f"document {_shown(doc_id)} has {len(doc.sections)} "
                    f"sections, numbered from 0; no section {_shown(raw)}",
                    index=name,
                )
        return page(
            "document.html",
            index=name,
            doc=doc,
            section=section,
            query=request.query_params.get("q", ""),
            declared=declared_values(index, doc.metadata, text=True),
        )

    async def refused(request: Request, exc: Exception) -> HTMLResponse:
        assert isinstance(exc, _Refused)
        return exc.response

    # an unknown path, a method other than GET
    async def http_error(request: Request, exc: Exception) -> HTMLResponse:
        assert isinstance(exc, HTTPException)
        what = (
            "no such page"
            if exc.status_code == 404
            else f"{exc.detail} (every page here is read with GET)"
            if exc.status_code == 405
            else str(exc.detail)
        )
        response = missing(what, exc.status_code)
        response.headers.update(exc.headers or {})
        return response

    app = Starlette(
        exception_handlers={_Refused: refused, HTTPException: http_error},
        routes=[
            Route("/", home),
            Route("/search", search),
            Route("/doc", document),
            Route("/runs", runs_page),
            Route("/run", run_page),
            Route("/episode", episode_page),
            Route("/figure", figure),
        ],
    )
    return guarded(app, hosts, html_page)


def serve(
    indexes: Mapping[str, Index],
    host: str = "127.0.0.1",
    port: int = 8000,
    limits: WebLimits = WebLimits(),
    runs: Mapping[str, LoadedRun] | None = None,
    allow_hosts: Sequence[str] = (),
) -> None:
    """Run the app with uvicorn until interrupted, answering the loopback names, `host` and
    `allow_hosts`."""
    try:
        import uvicorn
    except ImportError as e:  # pragma: no cover - the web extra
        raise _without_extra(e) from None
    uvicorn.run(
        create_app(indexes, limits, runs, HostPolicy.of(host, allow_hosts)),
        host=host,
        port=port,
        log_level="warning",
        # its log reaches stderr through sieve.common.terminal,
        # which shows colour codes as text
        use_colors=False,
    )
