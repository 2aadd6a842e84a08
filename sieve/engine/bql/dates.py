"""Date specs inside `date[...]`: partial ISO dates widen to their whole span."""

from __future__ import annotations

import calendar
import datetime as _dt
import re

_ONE = r"\d{4}(?:-\d{2}(?:-\d{2})?)?"
_RANGE_RE = re.compile(rf"^\s*({_ONE})?\s*\.\.\s*({_ONE})?\s*$")
_CMP_RE = re.compile(rf"^\s*(>=|<=|>|<)\s*({_ONE})\s*$")
_SINGLE_RE = re.compile(rf"^\s*({_ONE})\s*$")


def _ymd(value: str) -> tuple[int, int | None, int | None]:
    parts = [int(p) for p in value.split("-")]
    year, month, day = parts[0], (parts[1] if len(parts) > 1 else None), (parts[2] if len(parts) > 2 else None)
    if year == 0:
        raise ValueError(f"year 0 does not exist in {value!r}")
    if month is not None and not 1 <= month <= 12:
        raise ValueError(f"month {month} does not exist in {value!r}")
    if day is not None and not 1 <= day <= calendar.monthrange(year, month or 1)[1]:
        raise ValueError(f"day {day} does not exist in {value!r}")
    return year, month, day


def _int(d: _dt.date) -> int:
    return d.year * 10000 + d.month * 100 + d.day


def first_day(value: str) -> int:
    """YYYYMMDD of the first day a partial date covers (how a document's date is stored)."""
    y, m, d = _ymd(value)
    return y * 10000 + (m or 1) * 100 + (d or 1)


def last_day(value: str) -> int:
    """YYYYMMDD of the last day a partial date covers."""
    y, m, d = _ymd(value)
    if m is None:
        return y * 10000 + 1231
    if d is None:
        return y * 10000 + m * 100 + calendar.monthrange(y, m)[1]
    return y * 10000 + m * 100 + d


def _shift(day: int, days: int) -> int:
    d = _dt.date(day // 10000, day // 100 % 100, day % 100)
    try:
        return _int(d + _dt.timedelta(days=days))
    except OverflowError:
        raise ValueError("the range runs past the calendar (years 1 to 9999)") from None


def parse_date_spec(spec: str) -> tuple[int | None, int | None]:
    """Inclusive (lo, hi) YYYYMMDD bounds of a date spec; None is an open end. Raises ValueError."""
    m = _SINGLE_RE.match(spec)
    if m:
        return first_day(m.group(1)), last_day(m.group(1))
    m = _CMP_RE.match(spec)
    if m:
        op, value = m.groups()
        if op == ">=":
            return first_day(value), None
        if op == ">":
            return _shift(last_day(value), 1), None
        if op == "<=":
            return None, last_day(value)
        return None, _shift(first_day(value), -1)
    m = _RANGE_RE.match(spec)
    if m:
        a, b = m.groups()
        if a is None and b is None:
            raise ValueError("a range needs at least one end, as in 2018.. or ..2023")
        lo = first_day(a) if a else None
        hi = last_day(b) if b else None
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(f"the range {a}..{b} is reversed")
        return lo, hi
    raise ValueError(f"{spec.strip()!r} is not a date (YYYY, YYYY-MM, YYYY-MM-DD), a range a..b or a comparison such as >=2020")
