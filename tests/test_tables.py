"""Comparison table, its four writers, and the plots."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread
from scipy import stats

from matplotlib.backends.backend_agg import FigureCanvasAgg

from rankstudy.reporting.plots import ndcg_at_k_figure, ndcg_at_k_plot
from rankstudy.reporting import comparison, tables
from rankstudy.reporting.significance import holm, paired_ttest, randomization_test
from rankstudy.reporting.comparison import STATS, comparison_table
from rankstudy.reporting.tables import mean_std_text, write_tables

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


def assert_latex_clean(tex: str, n_columns: int) -> None:
    """What would stop pdflatex, or print other glyphs than meant, in a .tex file: unescaped
    specials, text-mode < > | (other glyphs in OT1), an odd number of $ on a line, unbalanced
    braces, rows with the wrong number of &, and symbols plain LaTeX has no glyph for."""
    lines = tex.splitlines()
    assert lines[0].startswith("% ")  # the only comment
    for line in lines[1:]:
        plain = re.sub(r"\\[\\&%$#_{}]", "", line)  # escaped specials and row ends
        assert plain.count("$") % 2 == 0, line
        text = re.sub(r"\$[^$]*\$", "", plain)  # outside math
        assert not re.search(r"[%#_^<>|~&]", text.replace(" & ", "")), line
        depth = 0
        for ch in plain:
            depth += {"{": 1, "}": -1}.get(ch, 0)
            assert depth >= 0, line
        assert depth == 0, line
        if line.endswith(r"\\"):
            assert plain.count("&") == n_columns - 1, line
        assert all(ch.isascii() or ch.isalpha() for ch in line), line  # accented letters are fine
    assert "$>$=" not in tex and "$<$=" not in tex


def tiny_frame(n_queries: int, shifts: dict[str, float], seed: int = 3, noise: float = 0.01) -> pd.DataFrame:
    """One fold of ``n_queries``; each system is base + its shift + a little noise, on 'map'."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.6, n_queries)
    return pd.concat([pd.DataFrame({"system": name, "fold": 1, "qid": np.arange(n_queries),
                                    "map": base + shift + (rng.normal(0, noise, n_queries) if shift else 0.0)})
                      for name, shift in shifts.items()], ignore_index=True)




def best_cell(table: pd.DataFrame, metric: str) -> str:
    return f"{table.loc[BEST, (metric, 'mean')]:.4f} ± {table.loc[BEST, (metric, 'std')]:.4f}"


def test_writers_produce_all_files_with_caption_and_best_cell(table, tmp_path):
    metrics = ["ndcg@10", "map", "p@10"]
    paths = write_tables(table, metrics, tmp_path / "out" / "mq2008_test", CAPTION)
    assert [p.name for p in paths] == [f"mq2008_test.{ext}" for ext in ("csv", "md", "tex", "html")]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(p.name for p in paths)  # no temp leftovers
    csv, md, tex, html = (p.read_text(encoding="utf-8") for p in paths)
    cell = best_cell(table, "map")
    worse_cell = f"{table.loc[ODD_NAME, ('map', 'mean')]:.4f} ± {table.loc[ODD_NAME, ('map', 'std')]:.4f}"
    tied_cell = f"{table.loc['tied', ('map', 'mean')]:.4f} ± {table.loc['tied', ('map', 'std')]:.4f}"

    # Markdown: caption ('_' escaped), bold best cell with the up arrow and both marks, the
    # significantly worse system with the down arrow, the tied one unmarked, legend
    assert CAPTION.replace("_", "\\_") in md
    assert f"**{cell}** ▲\\*†" in md
    assert f"{worse_cell} ▼\\*†" in md
    assert f" {tied_cell} |" in md  # no marks after it
    assert f"**{worse_cell}" not in md
    assert "rank\\_net [rho0.10]" in md
    assert "Holm" in md and "paired t-test" in md and "▲/▼: better/worse than the baseline base" in md
    # the differences with their intervals and the p-values, in tables of their own
    diff = table.loc[BEST, ("map", "diff")]
    lo, hi = table.loc[BEST, ("map", "diff_lo")], table.loc[BEST, ("map", "diff_hi")]
    assert f"{diff:+.4f} [{lo:+.4f}, {hi:+.4f}]" in md
    assert f"{table.loc[ODD_NAME, ('map', 'p_ttest_holm')]:.3g} / " in md or "<0.001 / " in md
    assert "Warning" not in md  # no validation counts given

    # LaTeX: booktabs, said so on the first line, escaped caption, bold best cell with marks
    assert tex.splitlines()[0].startswith("%") and r"\usepackage{booktabs}" in tex.splitlines()[0]
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert r"\caption{" + CAPTION.replace("%", r"\%") + "}" in tex
    assert r"\textbf{" + cell.replace("±", r"$\pm$") + r"}$\uparrow^{*\dagger}$" in tex
    assert worse_cell.replace("±", r"$\pm$") + r"$\downarrow^{*\dagger}$" in tex
    assert r"rank\_net {[}rho0.10{]}" in tex
    assert r"p@10" in tex
    assert_latex_clean(tex, n_columns=len(metrics) + 1)
    assert "$^{*}$ the paired t-test" in tex and "p $<$ 0.05" in tex  # legend

    # HTML: styled, caption in <caption>, best in <b>, marks in a fixed-width box, sup without leading
    assert "<style>" in html and "line-height: 0" in html and "nth-child(even)" in html
    assert f"<caption>{CAPTION}</caption>" in html
    # the std under the mean, after an empty marks box so the digits line up
    mean, std = cell.split(" ± ")
    assert (f'<b>{mean}</b><span class="marks"><span class="better">▲</span><sup>*†</sup></span>'
            f'<br><span class="sub">±{std}</span><span class="marks"></span>') in html
    worse_mean, worse_std = worse_cell.split(" ± ")
    assert f'{worse_mean}<span class="marks"><span class="worse">▼</span><sup>*†</sup></span>' in html
    assert 'rank_net<br><span class="sub">[rho0.10]</span>' in html  # the feature set under the method

    # CSV: every number, long form, readable back
    numbers = pd.read_csv(paths[0])
    assert len(numbers) == len(metrics) * len(table)
    row = numbers[(numbers["metric"] == "map") & (numbers["system"] == BEST)].iloc[0]
    assert bool(row["best"]) and bool(row["sig_rand"]) and row["direction"] == "better"
    assert row["mean"] == pytest.approx(table.loc[BEST, ("map", "mean")], rel=1e-12)
    assert row["diff"] == pytest.approx(diff, rel=1e-12) and row["diff_lo"] < row["diff"] < row["diff_hi"]
    directions = numbers[numbers["metric"] == "map"].set_index("system")["direction"]
    assert directions.to_dict() == {"base": "none", "tied": "none", BEST: "better", ODD_NAME: "worse"}
    assert numbers.loc[numbers["is_baseline"], "system"].unique().tolist() == ["base"]
    assert "p_ttest_holm" in csv.splitlines()[0] and "too_few_queries" in csv.splitlines()[0]


def power_of_paired_ttest(difference: float, sd: float, n: int, alpha: float) -> float:
    """Power of the two-sided paired t-test at ``alpha`` for a true mean difference, written out
    from the noncentral t (both tails)."""
    critical = stats.t.ppf(1 - alpha / 2, n - 1)
    nc = difference * np.sqrt(n) / sd
    return stats.nct.sf(critical, n - 1, nc) + stats.nct.cdf(-critical, n - 1, nc)


def hand_holm(raw: dict[str, float]) -> dict[str, float]:
    """Holm's adjusted p-values by the textbook loop over the sorted p-values."""
    adjusted, running = {}, 0.0
    for j, system in enumerate(sorted(raw, key=raw.get)):
        running = max(running, min(1.0, (len(raw) - j) * raw[system]))
        adjusted[system] = running
    return adjusted


def test_differences_intervals_and_power_match_scipy(per_query, table):
    systems = ("tied", BEST, ODD_NAME)
    raw = {s: stats.ttest_rel(*matched(per_query, s, "base", "ndcg@5")).pvalue for s in systems}
    adjusted = hand_holm(raw)
    for system in systems:
        a, b = matched(per_query, system, "base", "ndcg@5")
        part = table.loc[system, "ndcg@5"]
        # the interval at the level Holm tested the pair at: 1 - alpha p / p_holm
        level = 1 - 0.05 * raw[system] / adjusted[system]
        interval = stats.ttest_rel(a, b).confidence_interval(level)
        assert part["ci_level"] == pytest.approx(level, abs=1e-12)
        assert part["diff"] == pytest.approx(np.mean(a - b), abs=1e-12)
        assert part["diff_lo"] == pytest.approx(interval.low, abs=1e-12)
        assert part["diff_hi"] == pytest.approx(interval.high, abs=1e-12)
        # the minimum detectable differences: the t-test's power there is .8, at alpha and at alpha / 3
        sd, n = np.std(a - b, ddof=1), len(a)
        assert power_of_paired_ttest(part["mdd"], sd, n, 0.05) == pytest.approx(0.8, abs=1e-6)
        assert power_of_paired_ttest(part["mdd_family"], sd, n, 0.05 / 3) == pytest.approx(0.8, abs=1e-6)
    assert adjusted[ODD_NAME] > raw[ODD_NAME] and table.loc[ODD_NAME, ("ndcg@5", "ci_level")] > 0.95
    assert table.loc[ODD_NAME, ("ndcg@5", "direction")] == "worse"  # base - 0.02: significantly worse
    assert np.isnan(table.loc["base", ("ndcg@5", "diff")]) and table.loc["base", ("ndcg@5", "direction")] == "none"


def borderline_frame(n: int = 100) -> pd.DataFrame:
    """A baseline and six systems over n queries whose paired differences have exactly the mean
    and sd chosen: t-statistics from 0.5 to 4, so some raw p-values are below .05 and their
    Holm-adjusted ones above it (the MQ2008 MLP case: -.0200 [-.0391, -.0008], Holm p .205)."""
    rng = np.random.default_rng(21)
    base = rng.uniform(0.3, 0.6, n)
    frames = [pd.DataFrame({"system": "base", "fold": 1, "qid": np.arange(n), "map": base})]
    for i, t in enumerate([0.5, -2.1, 2.3, -2.6, 3.2, 4.0]):
        z = rng.normal(size=n)
        z = (z - z.mean()) / z.std(ddof=1)
        frames.append(pd.DataFrame({"system": f"s{i}", "fold": 1, "qid": np.arange(n),
                                    "map": base + 0.1 * (z + t / np.sqrt(n))}))
    return pd.concat(frames, ignore_index=True)


def test_intervals_exclude_zero_exactly_where_the_holm_adjusted_ttest_is_significant(tmp_path):
    frame = borderline_frame()
    table = comparison_table(frame, ["map"], "base", n_resamples=200)
    pairs = comparison.all_pairs_comparison(frame, ["map"], list(table.index), n_resamples=200)
    for rows in (table["map"].drop(index="base"), pairs):
        excludes = (rows["diff_lo"] > 0) | (rows["diff_hi"] < 0)
        significant = rows["p_ttest_holm"] < 0.05
        # informative: a raw p below .05 with an adjusted one above it
        assert ((rows["p_ttest"] < 0.05) & ~significant).any() and significant.any()
        assert (excludes == significant).all(), rows[["diff_lo", "diff_hi", "p_ttest", "p_ttest_holm"]]
    # and the table says which intervals they are
    md = write_tables(table, ["map"], tmp_path / "t", "c")[1].read_text(encoding="utf-8")
    assert "excludes 0 exactly where the Holm-adjusted t-test" in md


def test_too_few_queries_print_a_warning_mark_instead_of_significance(tmp_path):
    frame = tiny_frame(8, {"base": 0.0, "up": 0.2, "down": -0.2})
    few = comparison_table(frame, ["map"], "base", n_resamples=500)  # min_queries 20 by default
    part = few["map"]
    assert part.loc["up", "p_ttest_holm"] < 0.05  # the test alone would call it significant
    assert part["too_few_queries"].tolist() == [True, True, True]
    assert not part["sig_ttest"].any() and not part["sig_rand"].any()
    assert part["direction"].tolist() == ["none", "none", "none"]
    md, tex, html = (p.read_text(encoding="utf-8") for p in write_tables(few, ["map"], tmp_path / "few", "c")[1:])
    assert "▲" not in md.split("\n\n")[1] and "▼" not in md.split("\n\n")[1]  # the main table
    up_cell = f"{part.loc['up', 'mean']:.4f}"
    assert f"**{up_cell}** §" in md and r"$^{\S}$" in tex and "<sup>§</sup>" in html
    assert "§: only n = 8 paired test queries, fewer than 20 (report.min\\_queries)" in md
    # with a lower threshold the same data is marked
    enough = comparison_table(frame, ["map"], "base", n_resamples=500, min_queries=5)
    assert enough.loc["up", ("map", "direction")] == "better" and enough.loc["down", ("map", "direction")] == "worse"
    md = write_tables(enough, ["map"], tmp_path / "enough", "c")[1].read_text(encoding="utf-8")
    assert f"**{up_cell}** ▲\\*" in md and "§" not in md


def test_few_validation_queries_are_warned_about(table, tmp_path):
    warned = comparison.mark_validation_queries(table.copy(), {1: 12, 2: 40, 3: 19})
    md, tex, html = (p.read_text(encoding="utf-8") for p in write_tables(warned, ["map"], tmp_path / "w", "c")[1:])
    sentence = "fewer than 20 validation queries in fold 1 (12 queries), fold 3 (19 queries)"
    assert f"**Warning:** model selection chose on {sentence}" in md
    assert r"\textbf{Warning:}" in tex and sentence in tex
    assert '<p class="warning">' in html and sentence in html
    assert_latex_clean(tex, n_columns=2)
    fine = comparison.mark_validation_queries(table.copy(), {1: 20, 2: 40})
    assert "Warning" not in write_tables(fine, ["map"], tmp_path / "f", "c")[1].read_text(encoding="utf-8")


def test_systems_whose_test_scores_were_all_tied_are_marked_in_every_file(tmp_path):
    """The issue's trial: a test feature of 1e300 tied every test score, the table showed the
    file order's NDCG@10 with no mark. Flagged folds (from the method summaries) mark the system."""
    from types import SimpleNamespace

    from rankstudy.pipeline.results import tied_scores

    frame = tiny_frame(30, {"base": 0.0, "stuck": 0.05, "fine": -0.05})
    table = comparison_table(frame, ["map"], "base", n_resamples=200)
    ties = lambda share: {"test": {"all_tied_share": share, "flagged": share > 0.5}}  # noqa: E731
    summaries = {"stuck": SimpleNamespace(score_ties={"1": ties(1.0), "2": ties(0.0)}),
                 "fine": SimpleNamespace(score_ties={"1": ties(0.3)}), "base": SimpleNamespace(score_ties={})}
    flagged = tied_scores(summaries, 0.5)
    assert flagged == {"stuck": {1: 1.0}} and tied_scores(summaries, 0.2) == {"stuck": {1: 1.0}, "fine": {1: 0.3}}
    comparison.mark_tied_scores(table, flagged, 0.5)
    csv, md, tex, html = (p.read_text(encoding="utf-8") for p in write_tables(table, ["map"], tmp_path / "t", "c"))
    assert "| stuck ≡ " in md and "| fine " in md and "fine ≡" not in md
    assert "≡: every test score of a query tied in more than 50% of the queries" in md
    assert "stuck: fold 1 (100% of its queries)" in md
    assert r"stuck $\equiv$" in tex and "stuck ≡" in html
    assert_latex_clean(tex, n_columns=2)
    numbers = pd.read_csv(tmp_path / "t.csv").set_index("system")
    assert numbers["tied_scores"].to_dict() == {"base": False, "stuck": True, "fine": False}


def test_latex_escapes_every_special_character(tmp_path):
    hostile = "a_b%c&d#e$f{g}h~i^j\\k<l>m|n [x]"
    frame = tiny_frame(30, {"base": 0.0, hostile: 0.1, "Müller-Öl": -0.1})
    table = comparison_table(frame, ["map"], "base", n_resamples=200)
    comparison.mark_not_learned(table, {hostile: {1: ["no fall"]}})
    caption = "labels >= 1 and <= 4; mean ± std – † marks; 5% of queries & # dropped ⚠ (x ≥ y)"
    paths = write_tables(table, ["map"], tmp_path / "t", caption)
    tex = paths[2].read_text(encoding="utf-8")
    assert_latex_clean(tex, n_columns=2)
    assert (r"a\_b\%c\&d\#e\$f\{g\}h\textasciitilde{}i\textasciicircum{}j\textbackslash{}k$<$l$>$m$|$n {[}x{]} (!)"
            in tex)
    assert r"labels $\geq$ 1 and $\leq$ 4; mean $\pm$ std -- $^{\dagger}$ marks; 5\% of queries \& \# dropped" in tex
    pairs = comparison.all_pairs_comparison(frame, ["map"], list(table.index), n_resamples=200)
    tex = write_tables(table, ["map"], tmp_path / "p", caption, pairs=pairs, compare="all_pairs")[2]
    assert_latex_clean(tex.read_text(encoding="utf-8"), n_columns=3)


# ---------------------------------------------------------------- all pairs

PAIR_METRICS = ["map", "ndcg@10"]
ALPHA = 0.05


@pytest.fixture(scope="module")
def five_systems() -> pd.DataFrame:
    """2 folds x 40 queries, five systems far apart or close together, so that every Holm-adjusted
    p-value is far from alpha and the marks do not depend on resampling noise."""
    rng = np.random.default_rng(11)
    folds = np.repeat([1, 2], 40)
    qid = folds * 100 + np.tile(np.arange(40), 2)
    base = rng.uniform(0.2, 0.6, size=(80, len(PAIR_METRICS)))
    frames = []
    for name, shift in {"s1": 0.0, "s2": 0.004, "s3": 0.12, "s4": 0.25, "s5": -0.12}.items():
        values = base + shift + rng.normal(0, 0.05, size=base.shape)
        frames.append(pd.DataFrame({"system": name, "fold": folds, "qid": qid,
                                    **dict(zip(PAIR_METRICS, values.T))}).sample(frac=1.0, random_state=len(frames)))
    return pd.concat(frames, ignore_index=True)


def ranx_letters(frame: pd.DataFrame, stat_test: str) -> dict[tuple[str, str], str]:
    """ranx's compare marks of every (system, metric), from ranx's own tests on the same
    per-query values, Holm-adjusted over all pairs of a metric (ranx itself does not adjust)."""
    from ranx.data_structures import Report
    from ranx.data_structures.report import chars, super_chars
    from ranx.statistical_tests import compute_statistical_significance

    names = list(pd.unique(frame["system"]))
    ordered = frame.sort_values(["fold", "qid"], kind="stable")
    scores = {s: {m: ordered.loc[ordered["system"] == s, m].to_numpy() for m in PAIR_METRICS} for s in names}
    comparisons = compute_statistical_significance(names, scores, stat_test=stat_test, n_permutations=4000,
                                                   max_p=ALPHA, random_seed=42)
    for metric in PAIR_METRICS:
        pairs = list(itertools.combinations(names, 2))
        adjusted = holm([comparisons[a, b][metric]["p_value"] for a, b in pairs])
        for (a, b), p in zip(pairs, adjusted):
            comparisons[a, b][metric]["significant"] = bool(p < ALPHA)
    means = {s: {m: float(np.mean(scores[s][m])) for m in PAIR_METRICS} for s in names}
    report = Report(model_names=names, results=means, comparisons=comparisons, metrics=PAIR_METRICS, max_p=ALPHA,
                    win_tie_loss={}, stat_test=stat_test)
    return {(s, m): "".join(chars[super_chars.index(c)] for c in report.get_superscript_for_table(s, m))
            for s in names for m in PAIR_METRICS}, comparisons


def our_letters(pairs: pd.DataFrame, systems: list[str]) -> dict[tuple[str, str], str]:
    letters = tables.system_letters(systems)
    return {(s, m): "".join(letters[o] for o in beaten) for m in PAIR_METRICS
            for s, beaten in tables.beaten_systems(pairs, m, systems).items()}


@pytest.mark.parametrize("decided_by, stat_test", [("ttest", "student"), ("rand", "fisher")])
def test_all_pairs_marks_match_ranx(five_systems, decided_by, stat_test):
    systems = ["s1", "s2", "s3", "s4", "s5"]
    pairs = comparison.all_pairs_comparison(five_systems, PAIR_METRICS, systems, n_resamples=4000, alpha=ALPHA,
                                        decided_by=decided_by)
    assert len(pairs) == 10 * len(PAIR_METRICS) and (pairs["decided_by"] == decided_by).all()
    adjusted = pairs[f"p_{decided_by}_holm"]
    assert ((adjusted < ALPHA / 5) | (adjusted > ALPHA * 2)).all()  # no borderline pair
    expected, comparisons = ranx_letters(five_systems, stat_test)
    assert our_letters(pairs, systems) == expected
    assert expected[("s4", "map")] == "abce" and expected[("s1", "map")] == "e"  # informative
    raw = pairs.set_index(["metric", "system", "other"])[f"p_{decided_by}"]
    for (metric, a, b), p in raw.items():
        ranx_p = comparisons[a, b][metric]["p_value"]
        if stat_test == "student":
            assert p == pytest.approx(ranx_p, rel=1e-9)
        else:  # both Monte Carlo, 4000 resamples each
            assert p == pytest.approx(ranx_p, abs=0.04)


def test_all_pairs_pvalues_match_scipy_and_holm_over_all_pairs(five_systems):
    systems = ["s1", "s2", "s3", "s4", "s5"]
    pairs = comparison.all_pairs_comparison(five_systems, PAIR_METRICS, systems, n_resamples=500)
    part = pairs[pairs["metric"] == "ndcg@10"]
    for row in part.itertuples():
        a, b = matched(five_systems, row.system, row.other, "ndcg@10")
        assert row.p_ttest == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-9)
        assert row.diff == pytest.approx(np.mean(a - b), abs=1e-12)
        assert row.n_pairs == 80
    np.testing.assert_allclose(part["p_ttest_holm"], holm(part["p_ttest"]))
    assert (part["p_ttest_holm"] >= part["p_ttest"]).all()
    winners = set(part["winner"]) - {""}
    assert winners and winners <= set(systems)


def loop_sign_flip_pvalue(diff: np.ndarray) -> float:
    """Two-sided p over every sign flip, one flip at a time (small n only)."""
    n, observed, count = len(diff), abs(diff.mean()), 0
    for flips in range(2**n):
        signs = np.array([1.0 if (flips >> i) & 1 else -1.0 for i in range(n)])
        count += abs((signs * diff).mean()) >= observed - 1e-12
    return count / 2**n


def test_all_pairs_randomization_matches_an_exact_loop_on_a_tiny_case():
    frame = tiny_frame(10, {"x": 0.0, "y": 0.01, "z": 0.03}, noise=0.03)
    pairs = comparison.all_pairs_comparison(frame, ["map"], ["x", "y", "z"], n_resamples=20000, min_queries=1)
    wide = frame.pivot(index="qid", columns="system", values="map")
    exact = [loop_sign_flip_pvalue((wide[a] - wide[b]).to_numpy()) for a, b in zip(pairs["system"], pairs["other"])]
    assert any(0.05 < p < 0.95 for p in exact)  # informative
    se = np.sqrt(np.array(exact) * (1 - np.array(exact)) / 20000)
    assert (np.abs(pairs["p_rand"].to_numpy() - exact) < 4 * se + 1 / 20001).all()


def test_all_pairs_tables_show_letters_and_write_the_pairs(five_systems, tmp_path):
    systems = ["s1", "s2", "s3", "s4", "s5"]
    table = comparison_table(five_systems, PAIR_METRICS, "s1", n_resamples=500)
    pairs = comparison.all_pairs_comparison(five_systems, PAIR_METRICS, systems, n_resamples=500)
    paths = write_tables(table, PAIR_METRICS, tmp_path / "ap", "caption", pairs=pairs, compare="all_pairs")
    assert [p.name for p in paths] == [f"ap.{ext}" for ext in ("csv", "md", "tex", "html", "pairs.csv")]
    md, tex, html = (p.read_text(encoding="utf-8") for p in paths[1:4])
    s4 = f"{table.loc['s4', ('map', 'mean')]:.4f} ± {table.loc['s4', ('map', 'std')]:.4f}"
    assert re.search(rf"\| d   \| s4 +\| \*\*{re.escape(s4)}\*\* ᵃᵇᶜᵉ \|", md)
    # s4 beats every other system: alone in the top group, beside what the data set can detect
    assert re.search(r"\| +\| \(top group\) +\| +1 of 5 \| +1 of 5 \|", md)
    mdd = pairs.groupby("metric")["mdd"].median()
    assert re.search(rf"\| +\| \(MDD\) +\| +{mdd['map']:.4f} \| +{mdd['ndcg@10']:.4f} \|", md)
    assert "▲" not in md and "Holm-corrected over all 10 pairs" in md and "randomization test" in md
    assert r"\textbf{" + s4.replace("±", r"$\pm$") + r"}$^{\mathrm{abce}}$" in tex
    s4_mean, s4_std = s4.split(" ± ")
    assert f'<b>{s4_mean}</b><span class="marks"><sup>abce</sup></span><br><span class="sub">±{s4_std}</span>' in html
    assert_latex_clean(tex, n_columns=len(PAIR_METRICS) + 2)
    written = pd.read_csv(paths[4], keep_default_na=False)
    assert list(written.columns) == list(comparison.PAIR_COLUMNS) and len(written) == 20
    # few queries: no letters, the warning mark instead
    few = comparison.all_pairs_comparison(five_systems[five_systems["qid"] < 105], PAIR_METRICS, systems,
                                      n_resamples=200)
    assert few["too_few_queries"].all() and (few["winner"] == "").all()
    md = write_tables(table, PAIR_METRICS, tmp_path / "few", "c", pairs=few, compare="all_pairs")[1]
    assert "ᵃ" not in md.read_text(encoding="utf-8") and "§: only n = 5 paired" in md.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="all_pairs"):
        write_tables(table, PAIR_METRICS, tmp_path / "x", "c", compare="all_pairs")


def test_baseline_pairs_are_the_tables_tests(table):
    pairs = comparison.baseline_pairs(table, ["map"])
    assert list(pairs.columns) == list(comparison.PAIR_COLUMNS)
    assert pairs["system"].tolist() == ["tied", BEST, ODD_NAME] and (pairs["other"] == "base").all()
    assert pairs["winner"].tolist() == ["", BEST, "base"]
    np.testing.assert_array_equal(pairs["p_rand_holm"], table["map"].loc[["tied", BEST, ODD_NAME], "p_rand_holm"])


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


def test_wins_ties_and_losses_against_the_baseline_count_the_paired_queries(table, per_query, tmp_path):
    """PyTerrier's +/- columns: on how many paired queries a system beats, ties or loses to the
    baseline, counted independently here from the per-query frame."""
    for system in ("tied", BEST, ODD_NAME):
        part = table.loc[system, METRICS[0]]
        wide = per_query.pivot(index=["fold", "qid"], columns="system", values=METRICS[0])
        d = (wide[system] - wide["base"]).to_numpy()
        assert (part["wins"], part["ties"], part["losses"]) == ((d > 0).sum(), (d == 0).sum(), (d < 0).sum())
        assert part["wins"] + part["ties"] + part["losses"] == part["n_pairs"]
    assert table.loc["tied", METRICS[0]][["wins", "losses"]].tolist() == [30, 30]
    assert table.loc["base", METRICS[0]][["wins", "ties", "losses"]].tolist() == [0, 60, 0]
    md = [p for p in write_tables(table, METRICS, tmp_path / "t", CAPTION) if p.suffix == ".md"][0].read_text()
    assert "Wins / ties / losses against the baseline base" in md and "30 / 0 / 30 of 60" in md


def test_the_chosen_settings_print_integers_as_integers_and_timing_drops_empty_columns(tmp_path):
    from types import SimpleNamespace

    from rankstudy.reporting import chosen, timing

    summaries = {"lambdamart [first]": SimpleNamespace(chosen={"1": {"num_leaves": 15, "best_iteration": 22}},
                                                       learned={"1": {"learned": True}}),
                 "ranknet [first]": SimpleNamespace(chosen={"1": {"l2": 0.01}}, learned={"1": {"learned": True}})}
    frame = chosen.chosen_frame(summaries)
    md = [p for p in chosen.write_chosen(frame, tmp_path / "t", "c") if p.suffix == ".md"][0].read_text()
    assert re.search(r"\| 22 +\| – +\| 15 +\|", md) and "22.0" not in md and "0.01" in md
    frame = timing.timing_frame({"ranknet [first]": {"train_job_seconds": 3.0, "fit_seconds": 1.0}})
    md = [p for p in timing.write_timing(frame, tmp_path / "t", "c") if p.suffix == ".md"][0].read_text()
    assert "argmax" not in md and "QP" not in md and "train job (s)" in md
    assert "argmax_seconds" in (tmp_path / "t.timing.csv").read_text()  # the CSV keeps every column


def test_a_random_ranking_is_a_row_of_its_own_outside_the_tests(table, tmp_path):
    table = table.copy()
    table.attrs = {**table.attrs, "random": {METRICS[0]: 0.1234, "map": 0.2345}}
    md = [p for p in write_tables(table, METRICS, tmp_path / "t", CAPTION) if p.suffix == ".md"][0].read_text()
    row = next(line for line in md.splitlines() if "(a random ranking)" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "0.1234" and cells[METRICS.index("map") + 1] == "0.2345" and cells[2] == "–"
    assert "10 seeded random rankings per fold" in md
    csv = (tmp_path / "t.csv").read_text()
    assert "random" not in csv  # the long CSV holds the tested systems only


# ---------------------------------------------------------------- a screen's width

# An estimate of the HTML tables' rendered widths independent of the writer's own (character
# counts): each text's outline in DejaVu Sans, a common browser sans-serif on Linux and wider
# than Arial or Helvetica, from matplotlib's font machinery.
from html.parser import HTMLParser  # noqa: E402

import functools  # noqa: E402

from matplotlib.font_manager import FontProperties, findfont  # noqa: E402
from matplotlib.ft2font import FT2Font  # noqa: E402

FONT_PX = 16 * 0.9  # the tables' font: 90% of the browser's 16 px
DEJAVU = FontProperties(family="DejaVu Sans")


@functools.lru_cache(maxsize=None)
def _advance_em(char: str) -> float:
    """One character's advance width in DejaVu Sans, in em (from the font file, by FreeType)."""
    font = FT2Font(findfont(DEJAVU))
    font.set_size(100, 72)  # 100 pt at 72 dpi: 100 px to the em
    font.set_text(char)
    return font.get_width_height()[0] / 64 / 100


def text_px(text: str, size: float) -> float:
    """Width of ``text`` in DejaVu Sans at ``size`` px: the sum of its characters' advances."""
    return size * sum(_advance_em(ch) if ch != " " else 0.318 for ch in text)


class TableWidths(HTMLParser):
    """Each <table>'s width in px as a browser lays it out without wrapping: per column its widest
    cell (<br> lines apart, <sup> at 75%, .sub at 85%, a .marks box at least the CSS min-width),
    plus padding and borders."""

    def __init__(self, marks_px: float, padding_px: float):
        super().__init__()
        self.marks_px, self.padding_px = marks_px, padding_px
        self.tables, self.cell, self.stack, self.box = [], None, [], None

    def handle_starttag(self, tag, attrs):
        classes = dict(attrs).get("class") or ""
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = [0.0]
            self.tables[-1][-1].append(self.cell)
        elif tag == "br" and self.cell is not None:
            self.cell.append(0.0)
        if tag in ("sup", "span", "caption", "b"):
            self.stack.append((tag, classes))
            if "marks" in classes and self.cell is not None:
                self.box = self.cell[-1]

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.cell = None
        if tag in ("sup", "span", "caption", "b") and self.stack:
            _, classes = self.stack.pop()
            if "marks" in classes and self.cell is not None and self.box is not None:
                self.cell[-1] = max(self.cell[-1], self.box + self.marks_px)
                self.box = None

    def handle_data(self, data):
        if self.cell is None or any(t == "caption" for t, _ in self.stack):
            return
        scale = 1.0
        for tag, classes in self.stack:
            scale *= 0.75 if tag == "sup" else 0.85 if "sub" in classes else 1.0
        self.cell[-1] += text_px(data, FONT_PX * scale)

    def widths(self) -> list[tuple[int, float]]:
        out = []
        for rows in self.tables:
            n = max(len(r) for r in rows)
            columns = [0.0] * n
            for r in rows:
                for i, c in enumerate(r):
                    columns[i] = max(columns[i], max(c))
            out.append((n, sum(columns) + n * (2 * self.padding_px + 1) + 1))
        return out


def table_widths(document: str) -> list[tuple[int, float]]:
    marks_em = float(re.search(r"min-width: ([0-9.]+)em", document).group(1))
    padding = r"table.comparison th, table.comparison td \{[^}]*padding: [0-9.]+em ([0-9.]+)em"
    padding_em = float(re.search(padding, document).group(1))
    parser = TableWidths(marks_em * FONT_PX, padding_em * FONT_PX)
    parser.feed(document)
    return parser.widths()



LEADERBOARD_METRICS = ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "err", "mrr", "map", "p@10"]
LEADERBOARD_SYSTEMS = ["pointwise", "ranknet", "ranksvm", "listnet", "listmle", "tran_multiclass", "tran_regression",
                       "tran_rpl", "tran_wpll", "tran_smoothed_ndcg", "svm_map", "svm_ndcg", "dorm", "cond_mle",
                       "cond_convex", "structrank", "lambdamart", "mart", "random_forest", "mcrank",
                       "coordinate_ascent", "adarank_ndcg", "adarank_map", "rankboost", "mlp_softmax",
                       "mlp_ndcgloss2pp"]


def leaderboard_like(spread: float) -> pd.DataFrame:
    """The leaderboard study's shape: its 26 systems and 8 metrics, 300 test queries in 5 folds
    (MQ2008 has 784: as many digits); system i is the base minus ``spread`` times a scrambled i,
    plus noise."""
    rng = np.random.default_rng(2)
    n = 300
    base = rng.uniform(0.2, 0.7, size=(n, len(LEADERBOARD_METRICS)))
    frames = []
    for i, name in enumerate(LEADERBOARD_SYSTEMS):
        values = np.clip(base - spread * ((7 * i) % 26) + rng.normal(0, 0.15, size=base.shape), 0, 1)
        frame = pd.DataFrame(values, columns=LEADERBOARD_METRICS)
        frame.insert(0, "qid", np.arange(n))
        frame.insert(0, "fold", np.arange(n) % 5 + 1)
        frame.insert(0, "system", f"{name} [first]")
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def test_every_html_table_fits_a_screen_1000_px_wide(tmp_path):
    """The leaderboard's data set table was 1,600 px wide: now no table is wider than ~1,000 px
    (the main table in one piece when it fits, other tables in blocks of metrics)."""
    frame = leaderboard_like(0.01)
    table = comparison_table(frame, LEADERBOARD_METRICS, "ranknet [first]", n_resamples=100)
    pairs = comparison.all_pairs_comparison(frame, LEADERBOARD_METRICS, list(table.index), n_resamples=100,
                                        decided_by="ttest")  # the t-test: no resampling to wait for
    assert (pairs["winner"] != "").sum() > 300  # informative: long lists of letters
    # against the baseline; every pair with its letters; every pair with none won (all alike)
    for name, compare, tested in (("baseline", "baseline", pairs), ("all_pairs", "all_pairs", pairs),
                                  ("alike", "all_pairs", pairs.assign(winner=""))):
        paths = write_tables(table, LEADERBOARD_METRICS, tmp_path / name, "c", pairs=tested, compare=compare)
        document = paths[3].read_text(encoding="utf-8")
        widths = table_widths(document)
        assert max(w for _, w in widths) <= 1000, (name, widths)
        assert max(len(h) for h in re.findall(r"<th>([^<]*)</th>", document)) <= 8  # ndcg@10, p@10, system
        if name != "all_pairs":  # the main table in one piece
            assert widths[0][0] == len(LEADERBOARD_METRICS) + (2 if compare == "all_pairs" else 1), (name, widths)


def test_letters_in_runs_are_written_as_ranges_where_shorter():
    order = list("abcdefgh")
    assert tables.letter_ranges(list("abcdefh"), order, "") == "a–f,h"
    assert tables.letter_ranges(list("abce"), order, "") == "abce"  # no shorter
    assert tables.letter_ranges(list("acegh"), order, "") == "acegh"
    assert tables.letter_ranges([], order, "") == ""


def test_the_power_sentence_needs_a_positive_detectable_difference():
    """Two identical systems have a zero MDD: 'differences below 0.0000' says nothing, so no sentence."""
    same = tiny_frame(30, {"base": 0.0, "copy": 0.0})
    assert tables.power_sentence(comparison_table(same, ["map"], "base", n_resamples=100), "map") == ""
    other = comparison_table(tiny_frame(30, {"base": 0.0, "up": 0.05}), ["map"], "base", n_resamples=100)
    mdd = other.loc["up", ("map", "mdd")]
    assert mdd > 0 and f"Power: MDD {mdd:.4f} (" in tables.power_sentence(other, "map")
    assert "cannot reliably be told apart" in tables.power_sentence(other, "map")
