"""The one table writer: rows of already formatted cells as a Markdown pipe table or an HTML
table, both made by pandas (Markdown through tabulate)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd


def _frame(header: Sequence[object], rows: Sequence[Sequence[object]]) -> pd.DataFrame:
    return pd.DataFrame([[str(cell) for cell in row] for row in rows], columns=[str(name) for name in header])


def markdown_table(header: Sequence[object], rows: Sequence[Sequence[object]], align_right: Sequence[int] = ()) -> str:
    """A pipe table; a ``|`` inside a cell is escaped and a line break becomes a space, so any
    text (example sentences) keeps the table intact. ``align_right``: column indices of numbers."""
    escape = lambda text: text.replace("|", "\\|").replace("\n", " ")  # noqa: E731
    frame = _frame(header, rows).map(escape).rename(columns=escape)
    alignment = ["right" if index in align_right else "left" for index in range(len(frame.columns))]
    return frame.to_markdown(index=False, tablefmt="pipe", disable_numparse=True, colalign=alignment) + "\n"


def html_table(header: Sequence[object], rows: Sequence[Sequence[object]]) -> str:
    """An HTML table with every cell escaped."""
    return _frame(header, rows).to_html(index=False, escape=True, border=0)
