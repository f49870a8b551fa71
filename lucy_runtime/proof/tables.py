"""Tables printed to a terminal: a pandas frame as plain text, names aligned left."""

from __future__ import annotations

import pandas as pd


def text_table(table: pd.DataFrame, *, left: tuple[str, ...] = (), **options) -> str:
    """``table`` as printed text, without the index; the ``left`` columns (names, lists) aligned left."""
    if table.empty:
        return " ".join(map(str, table.columns))
    shown = table.astype({c: str for c in left})
    for column in left:
        width = max([len(column), *shown[column].str.len()])
        shown[column] = shown[column].str.ljust(width)
        shown = shown.rename(columns={column: column.ljust(width)})
    return "\n".join(line.rstrip() for line in shown.to_string(index=False, **options).splitlines())
