"""The lines a finished run prints last (rankstudy.pipeline.summary): besides where the results are,
the systems its tables mark ⚠ (did not learn) or ≡ (test scores tied), which only the tables said
before: a 1e300 test feature gave ≡ in the table and nothing on the console."""

from __future__ import annotations

import subprocess
import sys
import time

import pandas as pd

from rankstudy.pipeline import layout
from rankstudy.pipeline.summary import flagged_systems, run_summary


def write_table(root, study: str, dataset: str, learned: dict[str, bool], tied: dict[str, bool]) -> None:
    """A table CSV as the tables job writes it: one row per (metric, system)."""
    path = root / (layout.fill(layout.TABLES, study=study, dataset=dataset) + ".csv")
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"metric": metric, "system": s, "mean": 0.5, "learned": learned[s], "tied_scores": tied[s]}
            for metric in ("ndcg@10", "map") for s in learned]
    pd.DataFrame(rows).to_csv(path, index=False)


def test_the_closing_lines_name_the_systems_marked_in_the_tables(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_table(tmp_path, "s", "MQ2008", learned={"ranknet [first]": True, "far [first]": True,
                                                   "broken [first]": False},
                tied={"ranknet [first]": False, "far [first]": True, "broken [first]": False})
    write_table(tmp_path, "s", "OHSUMED", learned={"ranknet [first]": True, "far [first]": True},
                tied={"ranknet [first]": False, "far [first]": False})
    lines = flagged_systems("s", ["MQ2008", "OHSUMED", "missing"])
    assert lines == [
        "  ⚠ did not learn on MQ2008: broken [first] (the legend of results/tables/s/MQ2008.md says which fold and why)",
        "  ≡ test scores tied on MQ2008: far [first] (the legend of results/tables/s/MQ2008.md says which fold and why)",
    ]
    text = run_summary("s", ["MQ2008", "OHSUMED"], time.time())
    assert "≡ test scores tied on MQ2008: far [first]" in text and "⚠ did not learn on MQ2008" in text
    assert "OHSUMED:" not in text


def test_a_table_from_before_the_tied_column_or_as_strings_is_read(tmp_path, monkeypatch):
    """learned as strings (a mixed column read back), and no tied_scores column (an older table)."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / (layout.fill(layout.TABLES, study="s", dataset="D") + ".csv")
    path.parent.mkdir(parents=True)
    pd.DataFrame({"metric": ["map", "map"], "system": ["a", "b"], "learned": ["True", "False"]}).to_csv(
        path, index=False)
    assert flagged_systems("s", ["D"]) == [
        "  ⚠ did not learn on D: b (the legend of results/tables/s/D.md says which fold and why)"]


def test_the_summary_reads_the_marks_without_the_tables_statistics(tmp_path):
    """It runs in Snakemake's own process at the end of every run: importing the tables module
    there (scipy.stats through the significance tests) cost about 1.9 s a run."""
    write_table(tmp_path, "s", "D", learned={"a": False}, tied={"a": True})
    code = ("import sys, time; from rankstudy.pipeline.summary import run_summary; "
            "text = run_summary('s', ['D'], time.time()); assert 'did not learn on D: a' in text, text; "
            "print(sorted(m for m in ('scipy.stats', 'rankstudy.reporting.tables') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
