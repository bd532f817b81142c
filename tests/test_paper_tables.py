"""Paper-layout tables: cells from templates, our fold means beside the published numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rankstudy.reporting import paper_tables

SPEC = {"reference": "unused", "table": 8, "rows": {"1": "unit", "2^(r_i-1)/2^(|L|-1)": "exp_r"},
        "columns": {"WPL": "wpl", "RPL": "rpl"}, "system": "{column}_{row} [first]", "metric": "err"}


@pytest.fixture
def per_query():
    rng = np.random.default_rng(0)
    rows = [{"system": f"{l}_{w} [first]", "fold": f, "qid": q, "err": rng.random()}
            for l in ("wpl", "rpl") for w in ("unit", "exp_r") for f in (1, 2) for q in range(5)]
    return pd.DataFrame(rows)


def published():
    return pd.DataFrame({"table": 8, "row": ["1", "1", "2^(r_i-1)/2^(|L|-1)"], "column": ["WPL", "RPL", "WPL"],
                         "metric": "ERR", "value": [0.4845, 0.498, 0.4993], "dataset": "Yahoo! LTR subset"})


def test_cells_fill_with_fold_means_and_published_values(per_query):
    table = paper_tables.fill(SPEC, per_query, {}, published())
    assert list(table["system"]) == ["wpl_unit [first]", "rpl_unit [first]", "wpl_exp_r [first]", "rpl_exp_r [first]"]
    folds = per_query[per_query.system == "rpl_exp_r [first]"].groupby("fold")["err"].mean()
    row = table.set_index("system").loc["rpl_exp_r [first]"]
    assert row["ours"] == pytest.approx(folds.mean()) and row["ours_std"] == pytest.approx(folds.std(ddof=1))
    assert np.isnan(row["published"])  # the paper has no number for this cell here
    assert table.set_index("system").loc["wpl_unit [first]", "published"] == 0.4845


def test_missing_system_is_an_error(per_query):
    with pytest.raises(ValueError, match="no results for system 'wpl_unit \\[rho0.10\\]'"):
        paper_tables.fill({**SPEC, "system": "{column}_{row} [rho0.10]"}, per_query, {}, published())


def test_markdown_keeps_pipes_inside_cells(per_query, tmp_path):
    table = paper_tables.fill(SPEC, per_query, {}, published())
    paper_tables.write(table, tmp_path / "x", "caption")
    lines = (tmp_path / "x.paper.md").read_text().splitlines()
    body = [l for l in lines if l.startswith("| 2^")]
    # an escaped pipe does not split the cell: same number of separators as the header
    assert len(body) == 1 and body[0].replace("\\|", "").count("|") == lines[2].count("|")
    assert "Yahoo! LTR subset" in lines[-1]
