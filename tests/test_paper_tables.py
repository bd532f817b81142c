"""Paper-layout tables: cells from templates, our fold means beside the published numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

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


def test_a_system_not_run_is_marked_not_run_and_named_below_the_table(per_query, tmp_path):
    """A subset of a study's methods (run_methods) runs to the end: its paper table shows the
    rows of the methods left out as "not run" instead of failing."""
    subset = per_query[per_query.system != "wpl_unit [first]"]
    table = paper_tables.fill(SPEC, subset, {}, published())
    row = table.set_index("system").loc["wpl_unit [first]"]
    assert not row["run"] and np.isnan(row["ours"])
    assert table.set_index("system").loc["rpl_unit [first]", "run"]
    grid = paper_tables.layout(table)
    assert grid.loc["1", "WPL (ours)"] == paper_tables.NOT_RUN and grid.loc["1", "WPL (paper)"] == "0.4845"
    assert grid.loc["1", "RPL (ours)"] != paper_tables.NOT_RUN
    md = [p for p in paper_tables.write(table, tmp_path / "t", "caption") if p.suffix == ".md"][0].read_text()
    assert "not run: wpl_unit [first] (not among this run's methods" in md


def test_a_metric_not_computed_is_still_an_error(per_query):
    with pytest.raises(ValueError, match="no results for system 'wpl_unit \\[first\\]' and metric 'map'"):
        paper_tables.fill({**SPEC, "metric": "map"}, per_query, {}, published())


def test_markdown_keeps_pipes_inside_cells(per_query, tmp_path):
    table = paper_tables.fill(SPEC, per_query, {}, published())
    paper_tables.write(table, tmp_path / "x", "caption")
    lines = (tmp_path / "x.paper.md").read_text().splitlines()
    body = [l for l in lines if l.startswith("| 2^")]
    # an escaped pipe does not split the cell: same number of separators as the header
    assert len(body) == 1 and body[0].replace("\\|", "").count("|") == lines[2].count("|")
    assert "Yahoo! LTR subset" in lines[-1]


# --- Dubey et al. (2009), Figure 3: the transcription -------------------------------------------

REPO = Path(__file__).resolve().parents[1]
DUBEY_ROWS = ["SVMmap", "RankBoost", "RankSVM", "ListNet", "BoltzRank2", "MLE", "ExpGain_AUC", "ExpGain_MAP",
              "ExpGain_NDCG", "L3_AUC", "L3_MAP", "L3_NDCG", "ConvexLoss_AUC", "ConvexLoss_MAP", "ConvexLoss_NDCG"]
LETOR3 = ["TD2003", "TD2004", "HP2003", "HP2004", "NP2003", "NP2004", "OHSUMED"]


def test_dubey2009_transcription_is_consistent():
    everything = pd.read_csv(REPO / "config/reference/dubey2009-published.csv", dtype={"row": str, "column": str})
    assert list(everything.columns) == ["table", "row", "column", "metric", "value", "dataset"]
    assert set(everything["table"]) == {3, 6}
    # Figure 6: MAP and NDCG@10 of ConvexLoss_NDCG on HP2004 for five restart skews k
    figure6 = everything[everything["table"] == 6]
    assert sorted(figure6["row"].astype(int).unique()) == [-20, -10, -5, 0, 5] and len(figure6) == 10
    assert figure6["value"].between(0, 1).all() and (figure6["dataset"].str.startswith("HP2004")).all()
    published = everything[everything["table"] == 3]
    assert (published["column"] == published["metric"]).all()
    assert set(published["column"]) == {"MAP", "NDCG@1", "NDCG@5", "NDCG@10"}
    assert published["value"].between(0, 1).all()
    assert not published.duplicated(["row", "column", "dataset"]).any()
    assert set(published["row"]) <= set(DUBEY_ROWS)
    short = published.assign(short=[paper_tables.short_dataset(d) for d in published["dataset"]])
    assert set(short["short"]) == set(LETOR3) | {"Microaverage"}
    assert not short.duplicated(["row", "column", "short"]).any()  # one number per column of the figure
    quoted = short["row"].isin(["ListNet", "BoltzRank2"])
    assert short.loc[quoted, "dataset"].str.contains("Volkovs and Zemel 2009, uncleaned", regex=False).all()
    assert set(short.loc[quoted, "short"]) <= {"TD2004", "OHSUMED"}
    # the microaverage is a query-weighted mean, so it lies within the range of the seven data sets
    checked = 0
    for (row, column), part in short.groupby(["row", "column"]):
        values = part.set_index("short")["value"]
        if set(LETOR3) <= set(values.index) and "Microaverage" in values.index:
            seven = values[LETOR3]
            assert seven.min() <= values["Microaverage"] <= seven.max(), (row, column)
            checked += 1
    assert checked >= 40


# --- the "datasets" layout ------------------------------------------------------------------

DS_SPEC = {"reference": "unused", "table": 3, "label": "Figure 3", "layout": "datasets",
           "rows": {"A": "A", "B": "B", "C": "C", "Q": "Q"}, "columns": {"MAP": "map", "NDCG@1": "ndcg@1"},
           "system": "{row} [first]", "metric": "{column}"}


@pytest.fixture
def ds_per_query():
    """Systems A, B, C over two folds; Q (a method the paper only quotes) is not among them."""
    base = {"A": 0.3, "B": 0.5, "C": 0.4}
    rows = [{"system": f"{s} [first]", "fold": f, "qid": q, "map": base[s] + 0.01 * f + 0.001 * q,
             "ndcg@1": 1 - base[s] + 0.02 * f}
            for s in base for f in (1, 2) for q in range(3)]
    return pd.DataFrame(rows)


def ds_published():
    cleaned, quoted = "D1 (cleaned)", "D2 (cleaned)"
    frame = pd.DataFrame([
        ("A", "MAP", 0.50, cleaned), ("B", "MAP", 0.70, cleaned), ("C", "MAP", 0.70, cleaned),
        ("Q", "MAP", 0.60, cleaned),
        ("A", "MAP", 0.20, quoted), ("B", "MAP", 0.40, quoted), ("C", "MAP", 0.30, quoted),
        ("Q", "MAP", 0.10, "D2 (quoted from elsewhere, uncleaned)"),
        ("A", "NDCG@1", 0.90, cleaned), ("B", "NDCG@1", 0.80, cleaned),
    ], columns=["row", "column", "value", "dataset"])
    return frame.assign(table=3, metric=frame["column"])


def test_datasets_layout_values_missing_systems_and_marks(ds_per_query):
    frame = paper_tables.fill_datasets(DS_SPEC, ds_per_query, ds_published(), "MQ2008")
    cells = frame.set_index(["column", "row", "source"])
    folds = ds_per_query[ds_per_query.system == "B [first]"].groupby("fold")["map"].mean()
    assert cells.loc[("MAP", "B", "ours"), "value"] == pytest.approx(folds.mean())
    assert cells.loc[("MAP", "B", "ours"), "std"] == pytest.approx(folds.std(ddof=1))
    assert np.isnan(cells.loc[("MAP", "Q", "ours"), "value"])
    # the quoted number joins its data set's column by the short name
    assert cells.loc[("MAP", "Q", "D2"), "value"] == 0.10
    assert cells.loc[("MAP", "Q", "D2"), "dataset"] == "D2 (quoted from elsewhere, uncleaned)"

    grids = paper_tables.layout_datasets(frame)
    assert list(grids) == ["MAP", "NDCG@1"]
    grid = grids["MAP"]
    assert list(grid.index) == ["A", "B", "C", "Q"]
    assert list(grid.columns) == ["ours (MQ2008, mean ± std over folds)", "D1", "D2"]
    ours = grid["ours (MQ2008, mean ± std over folds)"]
    assert ours["Q"] == "–"  # no results of ours for a method the paper only quotes
    b = cells.loc[("MAP", "B", "ours")]
    assert ours["B"] == f"{b['value']:.4f} ± {b['std']:.4f} ¹"
    assert ours["C"].endswith(" ²") and ours["A"].endswith(" ³")
    # ties share a rank: 0.70, 0.70 -> 1, 1; 0.60 -> 3; 0.50 -> 4 (unmarked)
    assert list(grid["D1"]) == ["0.5000", "0.7000 ¹", "0.7000 ¹", "0.6000 ³"]
    assert list(grids["NDCG@1"]["D2"]) == ["–"] * 4


def test_datasets_layout_kendall_tau_is_scipys(ds_per_query):
    frame = paper_tables.fill_datasets(DS_SPEC, ds_per_query, ds_published(), "MQ2008")
    agreement = paper_tables.rank_agreement(frame).set_index(["column", "source"])
    cells = frame.set_index(["column", "row", "source"])["value"]
    ours = [cells[("MAP", r, "ours")] for r in "ABC"]
    for source in ("D1", "D2"):
        theirs = [cells[("MAP", r, source)] for r in "ABC"]  # Q has no number of ours
        assert agreement.loc[("MAP", source), "value"] == pytest.approx(stats.kendalltau(ours, theirs).statistic)
        assert agreement.loc[("MAP", source), "n"] == 3
    ours1 = [cells[("NDCG@1", r, "ours")] for r in "AB"]
    assert agreement.loc[("NDCG@1", "D1"), "value"] == pytest.approx(
        stats.kendalltau(ours1, [0.90, 0.80]).statistic)
    assert agreement.loc[("NDCG@1", "D2"), "n"] == 0 and np.isnan(agreement.loc[("NDCG@1", "D2"), "value"])


def test_datasets_layout_without_any_result_is_an_error(ds_per_query):
    with pytest.raises(ValueError, match="none of the rows of column 'MAP' has results of ours.*'A \\[rho0.10\\]'"):
        paper_tables.fill_datasets({**DS_SPEC, "system": "{row} [rho0.10]"}, ds_per_query, ds_published(), "MQ2008")


def test_datasets_layout_files(ds_per_query, tmp_path):
    frame = paper_tables.fill_datasets(DS_SPEC, ds_per_query, ds_published(), "MQ2008")
    written = paper_tables.write_datasets(frame, tmp_path / "MQ2008", "Figure 3 of dubey2009 beside ours on MQ2008")
    assert [p.name for p in written] == ["MQ2008.paper.csv", "MQ2008.paper.md", "MQ2008.paper.html"]
    md = (tmp_path / "MQ2008.paper.md").read_text()
    assert md.startswith("Figure 3 of dubey2009 beside ours on MQ2008")
    assert "### MAP" in md and "### NDCG@1" in md
    assert "Kendall tau of our method order vs the paper's: D1 " in md and "(n=3)" in md
    assert "D2 (quoted from elsewhere, uncleaned)" in md.splitlines()[-1]
    long = pd.read_csv(tmp_path / "MQ2008.paper.csv")
    assert list(long.columns) == paper_tables.CSV_COLUMNS
    assert set(long["kind"]) == {"cell", "kendall_tau"}
    assert (long["kind"] == "cell").sum() == 4 * 2 * 3  # rows x paper columns x (ours, D1, D2)
    assert (long["kind"] == "kendall_tau").sum() == 2 * 2
    assert "<h3>MAP</h3>" in (tmp_path / "MQ2008.paper.html").read_text()


def test_datasets_layout_when_our_data_set_is_one_of_the_papers(ds_per_query, tmp_path):
    """Ours on D1, which the paper also measured: D1's column follows ours with the difference,
    marks and Kendall's tau are ours and D1's only, D2 stays as unmarked context."""
    frame = paper_tables.fill_datasets(DS_SPEC, ds_per_query, ds_published(), "D1")
    cells = frame.set_index(["column", "row", "source"])
    assert cells.loc[("MAP", "B", "ours"), "diff"] == pytest.approx(cells.loc[("MAP", "B", "ours"), "value"] - 0.70)
    assert cells.loc[("MAP", "A", "D1"), "matching"] and not cells.loc[("MAP", "A", "D2"), "matching"]
    assert frame.loc[frame["source"] == "D2", "rank"].isna().all()
    agreement = paper_tables.rank_agreement(frame)
    assert set(agreement["source"]) == {"D1"}
    grid = paper_tables.layout_datasets(frame)["MAP"]
    assert list(grid.columns) == ["ours (D1, mean ± std over folds)", "paper (D1)", "difference", "D2 (context)"]
    assert list(grid["D2 (context)"]) == ["0.2000", "0.4000", "0.3000", "0.1000"]  # unmarked
    assert grid.loc["B", "difference"] == f"{cells.loc[('MAP', 'B', 'ours'), 'value'] - 0.70:+.4f}"
    assert grid.loc["Q", "difference"] == "–"
    paper_tables.write_datasets(frame, tmp_path / "D1", "caption")
    md = (tmp_path / "D1.paper.md").read_text()
    assert "Kendall tau of our method order vs the paper's: D1 " in md and "D2 " not in md.split("### NDCG@1")[0].split("Kendall")[1]
    assert "not comparable with ours" in md


# --- paper.convention: the table's metrics re-scored under a named convention ---

LETOR_SPEC = {"reference": "unused", "table": "LETOR 3.0 baselines", "rows": {"RankSVM": "ranksvm"},
              "columns": {"NDCG@10": "ndcg@10", "P@10": "p@10", "MAP": "map"}, "system": "{row} [first]",
              "metric": "{column}", "convention": "letor3"}


def test_rescore_under_a_named_convention_feeds_the_table(tmp_path):
    from rankstudy.evaluation import conventions
    from rankstudy.pipeline import results

    rng = np.random.default_rng(1)
    paths, expected = [], {"ndcg@10": [], "p@10": [], "map": []}
    for fold in (1, 2):
        lengths = [4, 12, 7, 15]  # two queries shorter than 10: 0 under letor3, not under ours
        qid = np.repeat(np.arange(len(lengths)) + 10 * fold, lengths)
        label = rng.integers(0, 3, len(qid))
        score = rng.integers(0, 3, len(qid)).astype(float)  # ties
        path = tmp_path / f"fold{fold}.tsv"
        pd.DataFrame({"qid": qid, "doc": np.arange(len(qid)), "label": label, "score": score}).to_csv(
            path, sep="\t", index=False)
        paths.append(path)
        offsets = np.r_[0, np.cumsum(lengths)]
        for m in expected:
            expected[m].append(conventions.per_query(score, label, offsets, m, "letor3").mean())
        assert expected["ndcg@10"][-1] < conventions.per_query(score, label, offsets, "ndcg@10", {}).mean()
    systems = [{"system": "ranksvm [first]", "method": "ranksvm", "featureset": "first"}]
    per_query = paper_tables.rescore(LETOR_SPEC, results.test_scores([paths], systems, [1, 2]), "letor3")
    assert sorted(per_query.columns) == ["fold", "map", "ndcg@10", "p@10", "qid", "system"]
    table = paper_tables.fill(LETOR_SPEC, per_query, {}, pd.DataFrame(columns=["row", "column", "value", "dataset"]))
    ours = table.set_index("column")["ours"]
    for column, metric in LETOR_SPEC["columns"].items():
        assert ours[column] == pytest.approx(np.mean(expected[metric]), abs=1e-12)
    with pytest.raises(ValueError, match="2 test score files of ranksvm \\[first\\] for folds \\[1, 2, 3\\]"):
        results.test_scores([paths], systems, [1, 2, 3])


def test_schema_offers_the_named_conventions():
    import yaml

    from rankstudy.evaluation import conventions

    schema = yaml.safe_load((Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml").read_text())
    assert schema["properties"]["paper"]["properties"]["convention"]["enum"] == sorted(conventions.NAMED)
