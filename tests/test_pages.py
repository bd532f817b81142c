"""Table files as pages of the Snakemake report: CSV as a table, Markdown rendered, LaTeX as text."""

from __future__ import annotations

from html.parser import HTMLParser

import pandas as pd
import pytest

from rankstudy.reporting.pages import table_page, write_table_page

MARKDOWN = """synthetic, study default: test split; p < 0.05 is marked \\*.

| system             |             ndcg@10 |   err |
|:-------------------|--------------------:|------:|
| ranknet [first]    | **0.6413 ± 0.1020** | 0.4706 |
| lambdamart [first] |  0.5276 ± 0.1005\\*† | 0.3715 |

Bold: best per metric. <script>alert(1)</script>
"""


class Cells(HTMLParser):
    """The text of every table cell of an HTML page, row by row, and its tags."""

    def __init__(self):
        super().__init__()
        self.rows, self.tags, self._in_cell = [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th"):
            self._in_cell = True
            self.rows[-1].append("")

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._in_cell = False

    def handle_data(self, data):
        if self._in_cell:
            self.rows[-1][-1] += data


def parse(page: str) -> Cells:
    cells = Cells()
    cells.feed(page)
    return cells


def test_a_csv_page_holds_every_cell(tmp_path):
    frame = pd.DataFrame({"system": ["ranknet [first]", "a<b & c"], "mean": [0.5, float("nan")], "best": [True, False]})
    frame.to_csv(tmp_path / "t.csv", index=False)
    cells = parse(table_page(tmp_path / "t.csv"))
    assert cells.rows == [["system", "mean", "best"], ["ranknet [first]", "0.5", "True"], ["a<b & c", "–", "False"]]


def test_a_markdown_page_is_rendered_and_its_html_stays_text(tmp_path):
    (tmp_path / "t.md").write_text(MARKDOWN)
    page = table_page(tmp_path / "t.md")
    cells = parse(page)
    assert cells.rows[0] == ["system", "ndcg@10", "err"]
    assert cells.rows[1][:2] == ["ranknet [first]", "0.6413 ± 0.1020"] and cells.rows[2][1] == "0.5276 ± 0.1005*†"
    assert "strong" in cells.tags  # the bold best value
    assert "script" not in cells.tags and "&lt;script&gt;" in page


def test_a_latex_page_shows_the_source(tmp_path):
    (tmp_path / "t.tex").write_text("\\begin{tabular}{lr}\na & $<$ 1 \\\\\n\\end{tabular}\n")
    page = table_page(tmp_path / "t.tex")
    assert "<pre>\\begin{tabular}{lr}\na &amp; $&lt;$ 1 \\\\\n\\end{tabular}\n</pre>" in page


def test_write_table_page_writes_the_page_and_refuses_other_files(tmp_path):
    (tmp_path / "t.timing.md").write_text("| a |\n|---|\n| 1 |\n")
    out = write_table_page(tmp_path / "t.timing.md", tmp_path / "pages" / "t.timing.md.html")
    assert out.read_text().startswith("<!DOCTYPE html>") and "<title>t.timing.md</title>" in out.read_text()
    with pytest.raises(ValueError, match="t.json"):
        table_page(tmp_path / "t.json")
