"""Synthetic closing prices shipped with the package (no network, ever).

Read with the standard library: the table is small, and the checker forks a child for
every step of every row, so a process that never imports pandas forks several times faster.
"""

from __future__ import annotations

import csv
import datetime
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from .errors import UnknownName
from .fields import require_id, require_int


@dataclass(frozen=True)
class Close:
    date: datetime.date
    close: float


@dataclass(frozen=True)
class PriceWindow:
    """The last closes of one ticker, oldest first."""

    ticker: str
    closes: tuple[Close, ...]

    def __len__(self) -> int:
        return len(self.closes)

    @property
    def values(self) -> tuple[float, ...]:
        return tuple(c.close for c in self.closes)


@lru_cache(maxsize=1)
def _table() -> dict[str, tuple[Close, ...]]:
    by_ticker: dict[str, list[Close]] = {}
    text = resources.files("lucy_runtime").joinpath("data/prices.csv").read_text(encoding="utf-8")
    for record in csv.DictReader(text.splitlines()):
        close = Close(datetime.date.fromisoformat(record["date"]), float(record["close"]))
        by_ticker.setdefault(record["ticker"], []).append(close)
    return {ticker: tuple(sorted(closes, key=lambda c: c.date)) for ticker, closes in sorted(by_ticker.items())}


class PriceBook:
    """Read-only closing prices by ticker."""

    @property
    def tickers(self) -> tuple[str, ...]:
        return tuple(_table())

    def window(self, ticker: str, days: int = 20) -> PriceWindow:
        require_id("ticker", ticker)
        require_int("days", days, minimum=1)
        closes = _table().get(ticker.upper())
        if not closes:
            raise UnknownName(f"ticker: no prices for {ticker!r}; known tickers are {', '.join(self.tickers)}")
        return PriceWindow(ticker.upper(), closes[-days:])
