"""The work, report and accepted-send tables, read from the files by a fresh reader."""

from __future__ import annotations

import html
import os

import pandas as pd

from ..observer import snapshot
from ..errors import TablesNotFound
from ..store import Store


def table_names(store: Store | str | os.PathLike) -> dict[str, str]:
    """The names of the learner's work and report tables, found as the observer finds them (by their
    columns), so supplied code works whatever the learner called them."""
    path = store.path if isinstance(store, Store) else os.fspath(store)
    found = snapshot(path)
    names = dict(found["tables"])
    missing = [what for what in ("work", "report") if what not in names]
    if missing:
        raise TablesNotFound(f"no {' or '.join(missing)} table in {os.path.basename(path)}: "
                             + "; ".join(found["problems"] or ["run create_schema first"]))
    return names


def tables(store: Store | str | os.PathLike, service_log: str | os.PathLike | None = None) -> dict:
    """The work, report and accepted-send tables as pandas DataFrames, read from the files."""
    path = store.path if isinstance(store, Store) else os.fspath(store)
    seen = snapshot(path, os.fspath(service_log) if service_log else None)
    frames = {
        "work": pd.DataFrame(seen["work"], columns=None if seen["work"] else
                             ["work_id", "source_id", "session_id", "text", "state"]),
        "report": pd.DataFrame(seen["reports"], columns=None if seen["reports"] else
                               ["report_id", "work_id", "generation", "session_id", "body", "delivery"]),
    }
    if service_log is not None:
        frames["accepted by the service"] = pd.DataFrame(
            seen["accepted"], columns=None if seen["accepted"] else ["remote_id", "report_id", "session_id", "body"])
    if seen["problems"]:
        frames["problems"] = pd.DataFrame({"problem": seen["problems"]})
    return frames


def tables_html(store: Store | str | os.PathLike, service_log: str | os.PathLike | None = None, *,
                title: str = "") -> str:
    """The tables one under another, as HTML."""
    parts = [f"<h4>{html.escape(title)}</h4>" if title else ""]
    for name, frame in tables(store, service_log).items():
        body = frame.to_html(index=False, escape=True, border=1) if len(frame) else "<p><i>(no rows)</i></p>"
        count = f"{len(frame)} row" + ("" if len(frame) == 1 else "s")
        parts.append(f"<div style='margin-bottom:0.8em'><b>{name}</b> — {count}{body}</div>")
    return "".join(parts)


def show(store: Store | str | os.PathLike, service_log: str | os.PathLike | None = None, *, title: str = "") -> None:
    """Display the tables one under another (in a notebook), or print them (elsewhere)."""
    try:
        from IPython.display import HTML, display  # noqa: PLC0415 - present only where IPython is
    except ImportError:  # pragma: no cover - outside IPython
        for name, frame in tables(store, service_log).items():
            print(f"-- {name} --\n{frame.to_string(index=False)}\n")
        return
    display(HTML(tables_html(store, service_log, title=title)))

