"""Progress for long commands: a live bar on a terminal, a plain line now and then in a log.

A bar redrawn with carriage returns is noise in a log file or a CI transcript, and one drawn
before an immediate error says nothing; so on a terminal this is a tqdm bar, and elsewhere a line
such as `indexing: 12,000 of 90,000 docs (8,400/s, about 8 s left)` at most every PLAIN_EVERY
seconds, and a last one at the end if anything was done. With a total, tqdm shows the ETA too.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

PLAIN_EVERY = 30.0


def _duration(seconds: float) -> str:
    """`45 s`, `12 min`, `3.5 h`."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    """`update(n)` adds n done; `set_total(total)` once known; `note(text)` a short suffix;
    `close()`."""

    def __init__(
        self,
        desc: str,
        unit: str,
        total: int | None = None,
        quiet: bool = False,
        stream: TextIO | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.desc, self.unit, self.total, self.quiet = desc, unit, total, quiet
        self.n = 0
        self._suffix = ""
        self._t0 = self._last = time.monotonic()
        self._bar: Any = None
        if not quiet and self.stream.isatty():
            from tqdm import tqdm

            # The bar redraws itself with carriage returns: it writes past the command line's
            # escaping (sieve.common.terminal.EscapingStream), with sieve's own words only.
            self._bar = tqdm(
                total=total,
                unit=f" {unit}",
                desc=desc,
                file=getattr(self.stream, "unescaped", self.stream),
                mininterval=0.5,
            )

    def set_total(self, total: int) -> None:
        self.total = total
        if self._bar is not None and self._bar.total != total:
            self._bar.total = total
            self._bar.refresh()

    def note(self, text: str) -> None:
        self._suffix = text
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=False)

    def update(self, n: int = 1) -> None:
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
        elif not self.quiet and time.monotonic() - self._last >= PLAIN_EVERY:
            self._line()

    def _line(self) -> None:
        self._last = now = time.monotonic()
        rate = self.n / max(now - self._t0, 1e-9)
        of = f" of {self.total:,}" if self.total else ""
        left = ""
        if self.total and rate > 0 and self.n < self.total:
            left = f", about {_duration((self.total - self.n) / rate)} left"
        suffix = f", {self._suffix}" if self._suffix else ""
        print(
            f"{self.desc}: {self.n:,}{of} {self.unit} ({rate:,.0f}/s{left}{suffix})",
            file=self.stream,
            flush=True,
        )

    def close(self) -> None:
        if self._bar is not None:
            # an estimate that was too high (blank lines, skipped records)
            if self._bar.total and self.n < self._bar.total:
                self._bar.total = self.n
                self._bar.refresh()
            self._bar.close()
        elif not self.quiet and self.n and time.monotonic() - self._t0 >= PLAIN_EVERY:
            self._line()  # a long run ends with its count; a short one's summary says it all
