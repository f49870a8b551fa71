"""Chapter 6's active procedure: the steps Lucy follows for a stock-brief request."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .fields import require_str
from .prices import PriceBook
from .sessions import Turn

_TICKER = re.compile(r"\b[A-Z][A-Z]{1,9}\b")
_DAYS = re.compile(r"\b(\d{1,3})\s*(?:d|days?)\b", re.I)


@dataclass(frozen=True)
class BriefPlan:
    ticker: str
    days: int


@dataclass(frozen=True)
class BriefFacts:
    ticker: str
    days: int
    as_of: str
    first_close: float
    last_close: float
    change_pct: float
    high: float
    low: float

    def line(self) -> str:
        return (
            f"FACTS ticker={self.ticker} days={self.days} as_of={self.as_of} first={self.first_close:.2f} "
            f"last={self.last_close:.2f} change={self.change_pct:+.2f} high={self.high:.2f} low={self.low:.2f}"
        )


class StockBriefProcedure:
    """read the request → find the ticker → look up prices → ask the model → return the brief"""

    name = "stock-brief"
    steps = (
        "read the request",
        "find a known ticker in it",
        "look up the closing prices",
        "ask the model for a short brief",
        "return the brief",
    )

    def __init__(self, prices: PriceBook | None = None):
        self._prices = prices or PriceBook()

    def plan(self, text: str) -> BriefPlan | None:
        """The ticker and window a request asks for, or None when it names no known ticker."""
        require_str("text", text)
        known = set(self._prices.tickers)
        ticker = next((word for word in _TICKER.findall(text.upper()) if word in known), None)
        if ticker is None:
            return None
        days = _DAYS.search(text)
        return BriefPlan(ticker, max(2, min(int(days.group(1)), 20)) if days else 5)

    def facts(self, plan: BriefPlan) -> BriefFacts:
        window = self._prices.window(plan.ticker, plan.days)
        closes = window.values
        first, last = closes[0], closes[-1]
        return BriefFacts(
            ticker=plan.ticker,
            days=len(window),
            as_of=window.closes[-1].date.isoformat(),
            first_close=first,
            last_close=last,
            change_pct=round((last - first) / first * 100, 2),
            high=max(closes),
            low=min(closes),
        )

    def prompt(self, facts: BriefFacts, context: tuple[Turn, ...] = ()) -> str:
        history = "\n".join(f"{turn.role}: {turn.text[:200]}" for turn in context)
        return (
            "You are Lucy. Write a two-sentence stock brief from these facts only.\n"
            f"{facts.line()}\n"
            f"Recent conversation:\n{history or '(none)'}\n"
        )

    def known_tickers(self) -> tuple[str, ...]:
        return self._prices.tickers
