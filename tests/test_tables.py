"""Comparison table, its four writers, and the plots."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread

from matplotlib.backends.backend_agg import FigureCanvasAgg

from rankstudy.reporting.plots import ndcg_at_k_figure, ndcg_at_k_plot
from rankstudy.reporting.significance import paired_ttest, randomization_test
from rankstudy.reporting.tables import STATS, comparison_table, mean_std_text, write_tables

METRICS = [f"ndcg@{k}" for k in range(1, 11)] + ["map", "p@10"]
N_RESAMPLES = 2000
CAPTION = (
    "MQ2008, test split, 3 folds, baseline base; ties broken by a random permutation; "
    "queries without a relevant document dropped (5% of queries)"
)
BEST = "better"
ODD_NAME = "rank_net [rho0.10]"  # needs escaping in Markdown and LaTeX
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def per_query() -> pd.DataFrame:
    """3 folds x 20 queries; 'better' is base + 0.15, 'tied' is base +- 0.04 alternately
    (mean difference exactly 0), ODD_NAME is base - 0.02 + noise. Each system's rows are
    shuffled differently, so pairing by position instead of by (fold, qid) breaks the tests."""
    rng = np.random.default_rng(0)
    folds = np.repeat([1, 2, 3], 20)
    qid = folds * 1000 + np.tile(np.arange(20), 3)  # each query is in one test fold
    base = rng.uniform(0.2, 0.6, size=(60, len(METRICS)))
    offsets = {
        "base": 0.0,
        "tied": np.where(np.arange(60) % 2 == 0, 0.04, -0.04)[:, None],
        BEST: 0.15 + rng.normal(0, 0.02, size=base.shape),
        ODD_NAME: -0.02 + rng.normal(0, 0.05, size=base.shape),
    }
    frames = []
    for system, offset in offsets.items():
        frame = pd.DataFrame(base + offset, columns=METRICS)
        frame.insert(0, "qid", qid)
        frame.insert(0, "fold", folds)
        frame.insert(0, "system", system)
        frames.append(frame.sample(frac=1.0, random_state=len(frames)))
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def table(per_query) -> pd.DataFrame:
    return comparison_table(per_query, METRICS, "base", n_resamples=N_RESAMPLES, seed=0)


def hand_mean_std(frame: pd.DataFrame, system: str, metric: str) -> tuple[float, float]:
    rows = frame[frame["system"] == system]
    fold_means = [np.nanmean(rows.loc[rows["fold"] == f, metric].to_numpy()) for f in (1, 2, 3)]
    return float(np.mean(fold_means)), float(np.std(fold_means, ddof=1))


def matched(frame: pd.DataFrame, system: str, baseline: str, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Values of system and baseline for the same (fold, qid), by an explicit join."""
    left = frame[frame["system"] == system][["fold", "qid", metric]]
    right = frame[frame["system"] == baseline][["fold", "qid", metric]]
    both = left.merge(right, on=["fold", "qid"], suffixes=("_s", "_b"))
    return both[f"{metric}_s"].to_numpy(), both[f"{metric}_b"].to_numpy()


# ---------------------------------------------------------------- table


def test_table_layout_and_order(table):
    assert list(table.index) == ["base", "tied", BEST, ODD_NAME]  # baseline first, then input order
    assert list(table.columns.get_level_values(0).unique()) == METRICS
    assert list(table[METRICS[0]].columns) == list(STATS)


def test_better_system_is_best_and_significant(table):
    for metric in METRICS:
        part = table[metric]
        assert part["best"].tolist() == [False, False, True, False], metric
        assert part.loc[BEST, "sig_ttest"] and part.loc[BEST, "sig_rand"], metric
        assert not part.loc["tied", "sig_ttest"] and not part.loc["tied", "sig_rand"], metric
        assert not part.loc["base", "sig_ttest"] and np.isnan(part.loc["base", "p_ttest"])
        others = part.drop(index="base")
        for column in ("p_ttest", "p_rand", "p_ttest_holm", "p_rand_holm"):
            assert ((others[column] > 0) & (others[column] <= 1)).all(), (metric, column)
        assert (others["p_ttest_holm"] >= others["p_ttest"]).all()
        # 'tied' differs by exactly +-0.04 alternately: mean difference 0
        assert part.loc["tied", "p_ttest"] == pytest.approx(1.0)
        assert part.loc["tied", "p_rand"] > 0.9
        # nothing beats every one of 2000 sign flips... except a shift of 0.15 over 60 queries
        assert part.loc[BEST, "p_rand"] == pytest.approx(1 / (N_RESAMPLES + 1))


def test_mean_std_and_pvalues_match_hand_computation(per_query, table):
    for system in table.index:
        for metric in ("ndcg@3", "map"):
            mean, std = hand_mean_std(per_query, system, metric)
            assert table.loc[system, (metric, "mean")] == pytest.approx(mean, rel=1e-12)
            assert table.loc[system, (metric, "std")] == pytest.approx(std, rel=1e-12)
            assert table.loc[system, (metric, "n_folds")] == 3
    a, b = matched(per_query, ODD_NAME, "base", "map")
    assert table.loc[ODD_NAME, ("map", "p_ttest")] == pytest.approx(paired_ttest(a, b), rel=1e-12)
    assert table.loc[ODD_NAME, ("map", "p_rand")] == randomization_test(a, b, n_resamples=N_RESAMPLES, seed=0)
    # Holm over the three non-baseline systems
    raw = table["map"].loc[["tied", BEST, ODD_NAME], "p_ttest"].to_numpy()
    order = np.argsort(raw)
    expected = np.maximum.accumulate(np.minimum(1, raw[order] * np.array([3, 2, 1])))
    np.testing.assert_allclose(table["map"].loc[["tied", BEST, ODD_NAME], "p_ttest_holm"].to_numpy()[order], expected)


def test_missing_baseline_names_it_and_lists_systems(per_query):
    with pytest.raises(ValueError, match=r"'lambdamart'.*base.*tied.*better"):
        comparison_table(per_query, METRICS, "lambdamart", n_resamples=10)


def test_missing_metric_and_duplicate_rows_are_rejected(per_query):
    with pytest.raises(ValueError, match="err"):
        comparison_table(per_query, ["err"], "base", n_resamples=10)
    doubled = pd.concat([per_query, per_query.iloc[:1]], ignore_index=True)
    with pytest.raises(ValueError, match="repeated"):
        comparison_table(doubled, ["map"], "base", n_resamples=10)


def test_nan_queries_are_excluded_pairwise(per_query):
    frame = per_query.copy()
    is_base, is_best = frame["system"] == "base", frame["system"] == BEST
    # baseline loses 3 queries of fold 1, 'better' loses 2 others of fold 2 and one shared
    frame.loc[is_base & frame["qid"].isin([1000, 1001, 1002, 2005]), "map"] = np.nan
    frame.loc[is_best & frame["qid"].isin([2003, 2004, 2005]), "map"] = np.nan
    table = comparison_table(frame, ["map"], "base", n_resamples=N_RESAMPLES)
    part = table["map"]
    assert not part["mean"].isna().any()
    for system in ("base", BEST):
        mean, std = hand_mean_std(frame, system, "map")
        assert part.loc[system, "mean"] == pytest.approx(mean, rel=1e-12)
        assert part.loc[system, "std"] == pytest.approx(std, rel=1e-12)
    assert part.loc[BEST, "n_pairs"] == 60 - 4 - 2  # union of the NaN queries
    assert part.loc["base", "n_pairs"] == 56
    a, b = matched(frame, BEST, "base", "map")
    keep = np.isfinite(a) & np.isfinite(b)
    assert part.loc[BEST, "p_ttest"] == pytest.approx(paired_ttest(a[keep], b[keep]), rel=1e-12)
    assert part.loc[BEST, "best"] and part.loc[BEST, "sig_ttest"]


def test_single_fold_has_no_std():
    frame = pd.DataFrame(
        {"system": ["a", "a", "b", "b"], "fold": 1, "qid": [1, 2, 1, 2], "map": [0.5, 0.7, 0.4, 0.6]}
    )
    table = comparison_table(frame, ["map"], "a", n_resamples=50)
    assert np.isnan(table.loc["a", ("map", "std")])
    assert mean_std_text(0.6, np.nan) == "0.6000"
    assert mean_std_text(np.nan, np.nan) == "–"


# ---------------------------------------------------------------- writers


def best_cell(table: pd.DataFrame, metric: str) -> str:
    return f"{table.loc[BEST, (metric, 'mean')]:.4f} ± {table.loc[BEST, (metric, 'std')]:.4f}"


def test_writers_produce_all_files_with_caption_and_best_cell(table, tmp_path):
    metrics = ["ndcg@10", "map", "p@10"]
    paths = write_tables(table, metrics, tmp_path / "out" / "mq2008_test", CAPTION)
    assert [p.name for p in paths] == [f"mq2008_test.{ext}" for ext in ("csv", "md", "tex", "html")]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(p.name for p in paths)  # no temp leftovers
    csv, md, tex, html = (p.read_text(encoding="utf-8") for p in paths)
    cell = best_cell(table, "map")
    worse_cell = f"{table.loc[ODD_NAME, ('map', 'mean')]:.4f}"

    # Markdown: caption ('_' escaped), bold best cell followed by both marks, legend
    assert CAPTION.replace("_", "\\_") in md
    assert f"**{cell}**\\*†" in md
    assert f"**{worse_cell}" not in md
    assert "rank\\_net [rho0.10]" in md
    assert "Holm" in md and "paired t-test" in md

    # LaTeX: booktabs, escaped caption, bold best cell with marks, no unescaped specials
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert r"\caption{" + CAPTION.replace("%", r"\%") + "}" in tex
    assert r"\textbf{" + cell.replace("±", r"$\pm$") + r"}$^{*\dagger}$" in tex
    assert r"rank\_net {[}rho0.10{]}" in tex
    assert r"p@10" in tex
    assert not re.search(r"(?<!\\)[_%#]", tex), "unescaped LaTeX special character"
    assert "<" not in tex.replace("$<$", "") and "$^{*}$: p $<$ 0.05" in tex  # legend
    body_rows = [line for line in tex.splitlines() if line.endswith(r"\\")]
    assert all(line.count("&") == len(metrics) for line in body_rows)

    # HTML: caption in <caption>, best in <b>
    assert f"<caption>{CAPTION}</caption>" in html
    assert f"<b>{cell}</b><sup>*†</sup>" in html
    assert "rank_net [rho0.10]" in html

    # CSV: every number, long form, readable back
    numbers = pd.read_csv(paths[0])
    assert len(numbers) == len(metrics) * len(table)
    row = numbers[(numbers["metric"] == "map") & (numbers["system"] == BEST)].iloc[0]
    assert bool(row["best"]) and bool(row["sig_rand"])
    assert row["mean"] == pytest.approx(table.loc[BEST, ("map", "mean")], rel=1e-12)
    assert numbers.loc[numbers["is_baseline"], "system"].unique().tolist() == ["base"]
    assert "p_ttest_holm" in csv.splitlines()[0]


def test_writer_failure_leaves_no_files(table, tmp_path):
    with pytest.raises(KeyError):
        write_tables(table, ["map", "not-a-metric"], tmp_path / "t", CAPTION)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- plots


def assert_valid_png(path, min_size=50):
    assert path.read_bytes()[:8] == PNG_MAGIC
    image = imread(path)
    assert image.ndim == 3 and image.shape[0] > min_size and image.shape[1] > min_size


def test_ndcg_at_k_plot_writes_a_png(per_query, tmp_path):
    out = ndcg_at_k_plot(per_query, tmp_path / "fig" / "ndcg.png", title="MQ2008 test")
    assert out == tmp_path / "fig" / "ndcg.png"
    assert_valid_png(out)
    assert [p.name for p in out.parent.iterdir()] == ["ndcg.png"]
    with pytest.raises(ValueError, match="ndcg@11"):
        ndcg_at_k_plot(per_query, tmp_path / "x.png", k_max=11)
    assert not (tmp_path / "x.png").exists()


def test_ndcg_plot_gives_each_method_a_colour_and_each_featureset_a_line_style():
    """12 systems (6 methods x 2 feature sets) would share colours in a 10-colour cycle."""
    methods = [f"method{i}" for i in range(6)]
    rows = [{"system": f"{m} [{f}]", "method": m, "featureset": f, "fold": 1, "qid": q,
             **{f"ndcg@{k}": 0.1 * i + 0.01 * k for k in range(1, 11)}}
            for i, m in enumerate(methods) for f in ("first", "rho0.10") for q in range(3)]
    fig = ndcg_at_k_figure(pd.DataFrame(rows))
    ax = fig.axes[0]
    lines = {bars.get_label(): bars.lines[0] for bars in ax.containers}  # each system's data line
    assert len(lines) == 12
    colors = {m: {lines[f"{m} [{f}]"].get_color() for f in ("first", "rho0.10")} for m in methods}
    assert all(len(c) == 1 for c in colors.values())  # one colour per method
    assert len({next(iter(c)) for c in colors.values()}) == 6  # distinct across methods
    styles = {f: {lines[f"{m} [{f}]"].get_linestyle() for m in methods} for f in ("first", "rho0.10")}
    assert all(len(s) == 1 for s in styles.values()) and styles["first"] != styles["rho0.10"]
    FigureCanvasAgg(fig).draw()
    assert ax.get_legend().get_window_extent().x0 > ax.get_window_extent().x1  # outside the axes
