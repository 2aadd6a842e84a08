"""Date specs inside `date[...]`: partial ISO dates widen to their whole span."""

from __future__ import annotations

import datetime as _dt
import re

from sieve.common.isodate import first_day, last_day

_ONE = r"\d{4}(?:-\d{2}(?:-\d{2})?)?"
_RANGE_RE = re.compile(rf"^\s*({_ONE})?\s*\.\.\s*({_ONE})?\s*$")
_CMP_RE = re.compile(rf"^\s*(>=|<=|>|<)\s*({_ONE})\s*$")
_SINGLE_RE = re.compile(rf"^\s*({_ONE})\s*$")


def _int(d: _dt.date) -> int:
    return d.year * 10000 + d.month * 100 + d.day


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
    raise ValueError(
        f"{spec.strip()!r} is not a date (YYYY, YYYY-MM, "
        "YYYY-MM-DD), a range a..b or a comparison such as >=2020"
    )
