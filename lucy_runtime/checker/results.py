"""Row results and the small table learners and educators read."""

from __future__ import annotations

import html
import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class RowResult:
    row_id: str
    passed: bool
    observation: str
    hint: str
    seconds: float
    covers: str = ""
    crash_points: int = 0
    """Crash points this row tried: processes it stopped on purpose and read back."""

    def line(self) -> str:
        mark = "PASS" if self.passed else "FAIL"
        text = f"{mark}  {self.row_id:<28} {self.observation}"
        if not self.passed and self.hint:
            text += f"\n      hint: {self.hint}"
        return text


@dataclass(frozen=True)
class CheckReport:
    results: tuple[RowResult, ...]
    title: str = "Self-check"
    not_run: str = ""
    """Why no row ran (a self-check while nbgrader autogrades); empty when the rows ran."""

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results)

    @property
    def crash_points(self) -> int:
        return sum(r.crash_points for r in self.results)

    @property
    def failing(self) -> list[str]:
        return [r.row_id for r in self.results if not r.passed]

    def summary(self) -> str:
        if self.not_run:
            return f"{self.title}: {self.not_run}"
        good = sum(r.passed for r in self.results)
        return f"{self.title}: {good} of {len(self.results)} rows hold"

    def __repr__(self) -> str:
        return "\n".join([self.summary()] + [r.line() for r in self.results])

    def _repr_html_(self) -> str:
        rows = []
        for r in self.results:
            colour = "#1a7f37" if r.passed else "#cf222e"
            mark = "✔" if r.passed else "✘"
            hint = "" if r.passed else f"<br><b>Hint:</b> {html.escape(r.hint)}"
            rows.append(
                f"<tr><td style='color:{colour};font-weight:bold'>{mark}</td>"
                f"<td><code>{html.escape(r.row_id)}</code></td>"
                f"<td style='text-align:left'>{html.escape(r.observation)}{hint}</td></tr>"
            )
        if not rows:  # no row ran (under autograde): a table header alone would say nothing
            return f"<p><b>{html.escape(self.summary())}</b></p>"
        return (
            f"<p><b>{html.escape(self.summary())}</b></p>"
            "<table><thead><tr><th></th><th>row</th><th style='text-align:left'>what the checker saw</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )

    def to_json(self) -> str:
        return json.dumps([asdict(r) for r in self.results], indent=2)
