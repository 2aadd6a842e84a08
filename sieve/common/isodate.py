"""ISO partial dates (`YYYY`, `YYYY-MM`, `YYYY-MM-DD`): the one parser that corpus dates and BQL's
`date[...]` both use, and the day numbers (YYYYMMDD integers) a partial date covers."""

from __future__ import annotations

import calendar
import re

_PARTIAL = re.compile(r"(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?")


def parse_partial(value: str) -> tuple[int, int | None, int | None]:
    """(year, month, day) of an ISO partial date; raises ValueError saying what is wrong."""
    m = _PARTIAL.fullmatch(value)
    if not m:
        raise ValueError(f"not an ISO date (YYYY, YYYY-MM or YYYY-MM-DD): {value!r}")
    year = int(m.group(1))
    month = int(m.group(2)) if m.group(2) else None
    day = int(m.group(3)) if m.group(3) else None
    if year == 0:
        raise ValueError(f"year 0 does not exist in {value!r}")
    if month is not None and not 1 <= month <= 12:
        raise ValueError(f"month {month} does not exist in {value!r}")
    if day is not None and not 1 <= day <= calendar.monthrange(year, month or 1)[1]:
        raise ValueError(f"day {day} does not exist in {value!r}")
    return year, month, day


def first_day(value: str) -> int:
    """YYYYMMDD of the first day a partial date covers (how a document's date is stored)."""
    y, m, d = parse_partial(value)
    return y * 10000 + (m or 1) * 100 + (d or 1)


def last_day(value: str) -> int:
    """YYYYMMDD of the last day a partial date covers."""
    y, m, d = parse_partial(value)
    if m is None:
        return y * 10000 + 1231
    if d is None:
        return y * 10000 + m * 100 + calendar.monthrange(y, m)[1]
    return y * 10000 + m * 100 + d
