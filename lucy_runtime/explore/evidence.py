"""A learner's predictions and observations, saved beside the notebook."""

from __future__ import annotations

import datetime as _dt
import json
import os
import tempfile
from enum import Enum
from pathlib import Path
from typing import Any

from ..fields import require_id, require_str


class Evidence:
    """A learner's saved evidence: predictions and observations, one JSON file per unit.

    The file lives beside the notebook, so it travels with the submission.
    """

    PLACEHOLDER = "write your prediction here"

    def __init__(self, unit: str, path: str | os.PathLike | None = None):
        self.unit = require_id("unit", unit)
        self.path = Path(path) if path is not None else Path.cwd() / f"{unit}_evidence.json"
        self.records: dict[str, dict] = {}
        if self.path.exists():
            try:
                self.records = json.loads(self.path.read_text(encoding="utf-8")).get("blocks", {})
            except (ValueError, AttributeError):
                self.records = {}

    def _block(self, block: str) -> dict:
        require_str("block", block, max_bytes=200)
        return self.records.setdefault(block, {})

    def predict(self, block: str, prediction: str) -> None:
        require_str("prediction", prediction)
        if self.PLACEHOLDER in prediction.lower():
            print(f"[{block}] Write your prediction in your own words first, then run this cell again.")
            return
        self._block(block)["prediction"] = prediction.strip()
        self._save()
        print(f"[{block}] prediction saved. Now run the experiment.")

    def record(self, block: str, **observations: Any) -> None:
        entry = self._block(block)
        entry.setdefault("observations", {}).update({k: _jsonable(v) for k, v in observations.items()})
        entry["saved_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        self._save()
        print(f"[{block}] evidence saved to {self.path.name}: {', '.join(observations)}")

    def compare(self, block: str) -> None:
        """Print the prediction beside what the experiment showed. It returns nothing, so a notebook
        cell that ends with it shows the text once (a returned string would be shown again, as a repr)."""
        print(self.comparison(block))

    def comparison(self, block: str) -> str:
        entry = self.records.get(block, {})
        prediction = entry.get("prediction", "(no prediction saved)")
        observed = json.dumps(entry.get("observations", {}), ensure_ascii=False, indent=1)[:1500]
        return f"You predicted:\n  {prediction}\nThe experiment showed:\n  {observed}"

    def _save(self) -> None:
        payload = {"unit": self.unit, "blocks": self.records}
        handle, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".evidence-", suffix=".json")
        with os.fdopen(handle, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False, indent=1)
        os.replace(tmp, self.path)


def _jsonable(value: Any) -> Any:
    """Evidence as plain JSON: tables become records, enums their values, anything else its repr."""
    if hasattr(value, "to_dict") and hasattr(value, "columns"):
        value = value.to_dict(orient="records")
    if isinstance(value, Enum):
        return _jsonable(value.value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    return repr(value)

