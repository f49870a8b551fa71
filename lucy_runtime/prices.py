"""Synthetic closing prices shipped with the package (no network, ever)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from .fields import require_id, require_int


@lru_cache(maxsize=1)
def _frame():
    import pandas as pd  # noqa: PLC0415 - imported on first use: pandas is slow to import

    with resources.files("lucy_runtime").joinpath("data/prices.csv").open("r", encoding="utf-8") as fh:
        frame = pd.read_csv(fh, parse_dates=["date"])
    return frame.sort_values(["ticker", "date"]).reset_index(drop=True)


class PriceBook:
    """Read-only closing prices by ticker, as a pandas DataFrame per request."""

    @property
    def tickers(self) -> tuple[str, ...]:
        return tuple(sorted(_frame()["ticker"].unique()))

    def window(self, ticker: str, days: int = 20):
        require_id("ticker", ticker)
        require_int("days", days, minimum=1)
        frame = _frame()
        rows = frame[frame["ticker"] == ticker.upper()]
        if rows.empty:
            raise KeyError(f"ticker: no prices for {ticker!r}; known tickers are {', '.join(self.tickers)}")
        return rows.tail(days).reset_index(drop=True)
