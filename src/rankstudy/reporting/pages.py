"""Table files as pages of the Snakemake report.

``snakemake --report`` shows images, HTML and PDF in its viewer; any other file (CSV, Markdown,
LaTeX) it offers only as a link to a ``data:`` URI, which browsers open as an empty tab. So each
table file the report should hold is written once more as a small self-contained HTML page:
CSV as an HTML table, Markdown rendered, LaTeX as its source.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd
from markdown_it import MarkdownIt

from rankstudy.util import atomic

STYLE = """
body { font-family: sans-serif; font-size: 14px; margin: 1em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; }
th { background: #f3f3f3; }
td { font-variant-numeric: tabular-nums; }
pre { font-size: 13px; white-space: pre-wrap; }
"""


def csv_body(text_path: Path) -> str:
    """Every row and column of the CSV file, as read back by pandas (missing values as –)."""
    return pd.read_csv(text_path).to_html(index=False, na_rep="–", border=0)


def markdown_body(text_path: Path) -> str:
    """The Markdown file rendered (CommonMark and pipe tables; raw HTML in it stays text)."""
    return MarkdownIt("commonmark", {"html": False}).enable("table").render(Path(text_path).read_text())


def source_body(text_path: Path) -> str:
    """The file's text as it is (LaTeX: the report cannot typeset it)."""
    return f"<pre>{html.escape(Path(text_path).read_text())}</pre>"


BODIES = {".csv": csv_body, ".md": markdown_body, ".tex": source_body}


def table_page(table_path: Path) -> str:
    """A self-contained HTML page showing the table file ``table_path``, titled by its name."""
    table_path = Path(table_path)
    if table_path.suffix not in BODIES:
        raise ValueError(f"no page for {table_path.name}: a table page shows {', '.join(BODIES)} files")
    title = html.escape(table_path.name)
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title>'
            f"<style>{STYLE}</style></head>\n<body><h3>{title}</h3>\n{BODIES[table_path.suffix](table_path)}"
            f"</body></html>\n")


def write_table_page(table_path: Path, out_html: Path) -> Path:
    return atomic.write_text(out_html, table_page(table_path))
