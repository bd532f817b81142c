"""The leaderboard's ranking and top-group logic on small hand-made tables (rankstudy.reporting.leaderboard),
and one small end-to-end run through the snakemake CLI."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba

from pipeline_runs import NO_MLFLOW
from rankstudy.reporting import leaderboard as lb
from rankstudy.reporting import comparison, plots

METRIC = "ndcg@10"


def numbers(means: dict[str, float], learned: dict[str, bool] | None = None, metric: str = METRIC) -> pd.DataFrame:
    """The tables' long CSV for one metric (and a second metric the leaderboard must ignore)."""
    learned = learned or {}
    rows = [{"metric": m, "system": s, "mean": v if m == metric else 1.0 - v, "std": 0.01, "n_folds": 5,
             "learned": learned.get(s, True)} for m in (metric, "map") for s, v in means.items()]
    return pd.DataFrame(rows)


def pairs(winners: dict[tuple[str, str], str], metric: str = METRIC) -> pd.DataFrame:
    """The pairs CSV: (system, other) -> winner ('' for no significant difference)."""
    return pd.DataFrame([{"metric": metric, "system": a, "other": b, "winner": w} for (a, b), w in winners.items()],
                        columns=["metric", "system", "other", "winner"])


def timing(seconds: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({"system": list(seconds), "train_job_seconds": list(seconds.values())})


def test_ranks_best_first_and_top_group_from_pairs():
    means = {"a": 0.40, "b": 0.50, "c": 0.48, "d": 0.30}
    tested = pairs({("a", "b"): "b", ("a", "c"): "", ("a", "d"): "a", ("b", "c"): "", ("b", "d"): "b",
                    ("c", "d"): "c"})
    board = lb.dataset_board(numbers(means), tested, timing({"a": 1.0, "b": 2.0, "c": 3.0}), METRIC)
    assert list(board["system"]) == ["b", "c", "a", "d"]
    assert list(board["rank"]) == [1.0, 2.0, 3.0, 4.0]
    # c is not told from b; a and d are beaten by b (a is not beaten by c, but c is not the best)
    assert list(board["top_group"]) == [True, True, False, False]
    assert list(board["best"]) == [True, False, False, False]
    assert board["train_seconds"].iloc[0] == 2.0 and np.isnan(board["train_seconds"].iloc[3])


def test_tied_best_share_rank_and_both_decide_the_top_group():
    means = {"a": 0.5, "b": 0.5, "c": 0.45, "d": 0.44}
    # c is beaten only by b (one of the two best): it leaves the group; d by neither
    tested = pairs({("a", "b"): "", ("a", "c"): "", ("b", "c"): "b", ("a", "d"): "", ("b", "d"): "",
                    ("c", "d"): ""})
    board = lb.dataset_board(numbers(means), tested, None, METRIC).set_index("system")
    assert board.loc["a", "rank"] == board.loc["b", "rank"] == 1.5
    assert board["best"].to_dict() == {"a": True, "b": True, "c": False, "d": False}
    assert board["top_group"].to_dict() == {"a": True, "b": True, "c": False, "d": True}


def test_a_winner_that_is_not_the_best_does_not_remove_anyone():
    tested = pairs({("a", "b"): "", ("a", "c"): "", ("b", "c"): "b"})
    board = lb.dataset_board(numbers({"a": 0.6, "b": 0.5, "c": 0.4}), tested, None, METRIC)
    assert board["top_group"].all()


def test_each_system_shows_the_detectable_difference_of_its_pair_with_the_best(tmp_path):
    """mdd of the pair (best, system) whichever way round the pairs file holds it; beside the top
    group, the data set's MDD: the median over every tested pair of the metric (as its table)."""
    means = {"a": 0.40, "b": 0.50, "c": 0.48, "d": 0.30}
    rows = [("a", "b", "b", 0.011, 0.02), ("a", "c", "", 0.5, 0.6), ("a", "d", "a", 0.6, 0.7),
            ("b", "c", "", 0.013, 0.03), ("d", "b", "b", 0.017, 0.04), ("c", "d", "c", 0.7, 0.8)]
    tested = pd.DataFrame([{"metric": METRIC, "system": a, "other": b, "winner": w, "mdd": m, "mdd_family": f}
                           for a, b, w, m, f in rows])
    tested = pd.concat([tested, tested.assign(metric="map", mdd=9.0, mdd_family=9.0)], ignore_index=True)
    board = lb.dataset_board(numbers(means), tested, None, METRIC).set_index("system")
    assert board["mdd"].to_dict() == pytest.approx({"b": np.nan, "a": 0.011, "c": 0.013, "d": 0.017}, nan_ok=True)
    assert board["mdd_family"].to_dict() == pytest.approx({"b": np.nan, "a": 0.02, "c": 0.03, "d": 0.04}, nan_ok=True)
    # the median over the six pairs of ndcg@10 (not over the best's three: .013)
    mdd, family = np.median([0.011, 0.5, 0.6, 0.013, 0.017, 0.7]), np.median([0.02, 0.6, 0.7, 0.03, 0.04, 0.8])
    assert (lb.dataset_power(board).mdd, lb.dataset_power(board).mdd_family) == pytest.approx((mdd, family))
    assert lb.heatmap_notes({"x": board.reset_index()}) == {"x": f"top group 2 of 4; MDD {mdd:.4f}"}
    lb.write_leaderboard({"x": board.reset_index()}, METRIC, tmp_path / "lb", "c", alpha=0.05, folds=[1])
    md = (tmp_path / "lb.md").read_text()
    assert f"2 of 4 systems in the top group. MDD {mdd:.4f} ({family:.4f} at Holm's strictest level)" in md
    assert "|   MDD vs best |" in md and "|        0.0170 |" in md
    assert f"MDD {mdd:.4f}" in (tmp_path / "lb.html").read_text()
    frame = pd.read_csv(tmp_path / "lb.csv")
    assert np.allclose(frame["dataset_mdd"], mdd) and np.allclose(frame["dataset_mdd_family"], family)
    # a pairs file from before the column: no number, no sentence
    old = lb.dataset_board(numbers(means), tested.drop(columns=["mdd", "mdd_family"]), None, METRIC)
    assert old["mdd"].isna().all() and "MDD" not in lb.power_line(old, METRIC)


def test_missing_pair_and_unknown_metric_are_clear_errors():
    with pytest.raises(ValueError, match="all_pairs"):
        lb.dataset_board(numbers({"a": 0.6, "b": 0.5}), pairs({}), None, METRIC)
    with pytest.raises(ValueError, match="report.metrics"):
        lb.dataset_board(numbers({"a": 0.6, "b": 0.5}), pairs({("a", "b"): ""}), None, "err")


def test_learned_flag_read_back_from_csv_strings():
    frame = numbers({"a": 0.6, "b": 0.5}, learned={"b": False})
    frame["learned"] = frame["learned"].map(str)  # as pd.read_csv may leave it in a mixed column
    board = lb.dataset_board(frame, pairs({("a", "b"): ""}), None, METRIC).set_index("system")
    assert board["learned"].to_dict() == {"a": True, "b": False}


def two_boards():
    x = lb.dataset_board(numbers({"a": 0.5, "b": 0.4, "c": 0.3}),
                         pairs({("a", "b"): "", ("a", "c"): "a", ("b", "c"): ""}), None, METRIC)
    # c did not run on y
    y = lb.dataset_board(numbers({"a": 0.2, "b": 0.3}, learned={"a": False}), pairs({("a", "b"): "b"}), None, METRIC)
    return {"x": x, "y": y}


def test_across_datasets_mean_rank_and_top_group_count_with_a_missing_system():
    overall = lb.across_datasets(two_boards()).set_index("system")
    assert overall.loc["a", "mean_rank"] == 1.5 and overall.loc["b", "mean_rank"] == 1.5
    assert overall.loc["c", "mean_rank"] == 3.0 and overall.loc["c", "n_datasets"] == 1
    assert overall["n_top_group"].to_dict() == {"a": 1, "b": 2, "c": 0}
    # equal mean ranks: more top groups first
    assert list(overall.index) == ["b", "a", "c"]
    assert overall["learned"].to_dict() == {"b": True, "a": False, "c": True}


def test_leaderboard_frame_has_each_system_once_per_dataset():
    frame = lb.leaderboard_frame(two_boards(), METRIC)
    assert list(frame.columns) == list(lb.COLUMNS)
    assert not frame.duplicated(["dataset", "system"]).any()
    assert frame.groupby("dataset")["system"].apply(sorted).to_dict() == {"x": ["a", "b", "c"], "y": ["a", "b"]}
    assert (frame["metric"] == METRIC).all()


def test_one_dataset(tmp_path):
    boards = {"x": two_boards()["x"]}
    overall = lb.across_datasets(boards)
    assert list(overall["mean_rank"]) == [1.0, 2.0, 3.0]
    written = lb.write_leaderboard(boards, METRIC, tmp_path / "leaderboard", "caption", alpha=0.05, folds=[1])
    assert sorted(p.name for p in written) == ["leaderboard.csv", "leaderboard.html", "leaderboard.md"]
    md = (tmp_path / "leaderboard.md").read_text()
    assert "## x" in md and "left out" not in md


def test_documents_mark_not_learned_top_group_and_missing(tmp_path):
    lb.write_leaderboard(two_boards(), METRIC, tmp_path / "leaderboard", "caption", alpha=0.05, folds=[1, 2])
    md = (tmp_path / "leaderboard.md").read_text()
    assert "a ⚠" in md and "did not learn" in md and "left out" in md
    assert md.index("## Across data sets") < md.index("## x") < md.index("## y")
    html = (tmp_path / "leaderboard.html").read_text()
    assert html.count('<tr class="top">') == 2 + 1 + 1  # x: a, b; y: b; across: b (top on both)
    back = pd.read_csv(tmp_path / "leaderboard.csv")
    assert len(back) == 5


def test_a_system_with_tied_test_scores_is_marked_on_the_board(tmp_path):
    frame = numbers({"a": 0.5, "b": 0.43})
    frame["tied_scores"] = frame["system"].eq("b").map(str)  # as read back from the tables' CSV
    board = lb.dataset_board(frame, pairs({("a", "b"): ""}), None, METRIC)
    assert board.set_index("system")["tied_scores"].to_dict() == {"a": False, "b": True}
    lb.write_leaderboard({"x": board}, METRIC, tmp_path / "lb", "c", alpha=0.05, folds=[1])
    md = (tmp_path / "lb.md").read_text()
    assert "| b ≡ " in md and "| a ≡" not in md and "≡: in some fold the test scores were all tied" in md
    assert lb.heatmap_frames({"x": board})[0].index.tolist() == ["a", "b ≡"]
    assert lb.leaderboard_frame({"x": board}, METRIC)["tied_scores"].tolist() == [False, True]
    # a tables CSV from before the column: nothing flagged
    assert not lb.dataset_board(numbers({"a": 0.5, "b": 0.43}), pairs({("a", "b"): ""}), None, METRIC)[
        "tied_scores"].any()


def test_heatmap_frames_and_plot(tmp_path):
    means, ranks, top = lb.heatmap_frames(two_boards())
    assert list(means.index) == ["b", "a ⚠", "c"] and list(means.columns) == ["x", "y"]
    assert np.isnan(means.loc["c", "y"]) and not top.loc["c", "y"]
    assert ranks.loc["b", "y"] == 1.0 and list(ranks.index) == list(top.index) == list(means.index)
    out = plots.leaderboard_plot(means, ranks, top, METRIC, tmp_path / "board.png", title="t")
    assert out.stat().st_size > 1000


def heat_board(means: dict[str, float], top: set[str]) -> pd.DataFrame:
    """A data set's board whose top group is ``top``: the best beats every other system."""
    best = max(means, key=means.get)
    tested = pairs({(best, s): "" if s in top else best for s in means if s != best})
    return lb.dataset_board(numbers(means), tested, None, METRIC)


def test_heat_map_colours_the_top_group_alike_and_the_rest_by_their_distance_below_it():
    """The issue's board: all 26 systems in the top group, spread .458-.491 from dark to bright.
    Now every system of a top group has one shade; outside it the colour darkens with the gap
    below the group's lowest member; grey where a system did not run."""
    alike = {f"s{i}": 0.458 + 0.033 * i / 25 for i in range(26)}
    spread = {"a": 0.50, "b": 0.49, "c": 0.47, "d": 0.44, "e": 0.40}
    boards = {"MQ2008": heat_board(alike, set(alike)), "other": heat_board(spread, {"a", "b"})}
    means, ranks, top = lb.heatmap_frames(boards)
    colours = plots.leaderboard_figure(means, ranks, top, METRIC).axes[0].images[0].get_array()
    cell = {(system, dataset): tuple(colours[i, j]) for i, system in enumerate(means.index)
            for j, dataset in enumerate(means.columns)}
    assert {cell[s, "MQ2008"] for s in alike} == {to_rgba(plots.TOP_GROUP_COLOUR)}
    assert cell["a", "other"] == cell["b", "other"] == to_rgba(plots.TOP_GROUP_COLOUR)
    luminance = {s: np.dot(cell[s, "other"][:3], [0.2126, 0.7152, 0.0722]) for s in "cde"}
    assert luminance["c"] > luminance["d"] > luminance["e"]  # farther below: darker
    assert cell["c", "other"] != to_rgba(plots.TOP_GROUP_COLOUR)
    assert cell["s0", "other"] == to_rgba("#d9d9d9")  # did not run there
    # under each data set's name: its top group's size (and its MDD where the pairs have one)
    notes = lb.heatmap_notes(boards)
    assert notes == {"MQ2008": "top group 26 of 26", "other": "top group 2 of 5"}
    labels = [t.get_text() for t in plots.leaderboard_figure(means, ranks, top, METRIC, notes=notes).axes[0]
              .get_xticklabels()]
    assert labels == ["MQ2008\ntop group 26 of 26", "other\ntop group 2 of 5"]
    relative = plots.below_top_group(means, top)
    # gaps below the group's lowest (.49) over the widest (.09): c .02, d .05, e .09
    assert relative[list(means.index).index("d"), 1] == pytest.approx(0.05 / 0.09)
    # with each data set's MDD, the gap in units of 3 MDDs, capped: a system just below stays light
    in_mdd = plots.below_top_group(means, top, {"MQ2008": 0.014, "other": 0.02})
    assert in_mdd[list(means.index).index("c"), 1] == pytest.approx(0.02 / 0.06)
    assert in_mdd[list(means.index).index("e"), 1] == 1.0  # .09 below: over 3 MDDs
    assert np.isnan(in_mdd[list(means.index).index("s0"), 1]) and (np.nan_to_num(in_mdd[:, 0]) == 0).all()
    # an MDD missing for a data set: the widest gap, as without any
    np.testing.assert_array_equal(plots.below_top_group(means, top, {"other": 0.02}), relative)
    figure = plots.leaderboard_figure(means, ranks, top, METRIC, mdd={"MQ2008": 0.014, "other": 0.02})
    assert "in the data set's MDDs" in figure.axes[1].get_ylabel()


SMALL_CONFIG = """\
study: boardtest
datasets: [synthetic, synthetic2]
folds: [1]
synthetic: {n_queries: 100, n_features: 17, max_len: 30}
features: {normalization: zscore, first_order: true, rho: []}
methods:
  ranknet: {kind: linear, params: {loss: ranknet, max_iter: 30}, grid: {l2: [1.0e-2]}}
  listnet: {kind: linear, params: {loss: listnet, max_iter: 30}, grid: {l2: [1.0e-2]}}
  pointwise: {kind: linear, params: {loss: pointwise_mse, max_iter: 30}, grid: {l2: [1.0e-2]}}
run_methods: [ranknet, listnet, pointwise]
report:
  baseline: ranknet
  metrics: [ndcg@10, map]
  compare: all_pairs
  n_resamples: 200
  leaderboard: {metric: ndcg@10}
"""

# a second generated data set, so the board spans two (docs/datasets.md, "Your own data set": registry_extra)
EXTRA_REGISTRY = """\
synthetic2:
  source: synthetic
  description: the embedded synthetic generator under a second name
  folds: 5
"""


METHODS = ("ranknet", "listnet", "pointwise")


@pytest.mark.slow
def test_leaderboard_through_snakemake(tmp_path):
    """The real CLI on a copy of the workflow: two generated data sets, one fold, three cheap methods."""
    repo = Path(__file__).resolve().parents[1]
    for name in ("Snakefile", "workflow", "config", "environment.yml"):
        src = repo / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    (tmp_path / "board.yaml").write_text(SMALL_CONFIG)
    (tmp_path / "extra.yaml").write_text(EXTRA_REGISTRY)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    snakemake = Path(sys.executable).with_name("snakemake")
    command = [str(snakemake), "--cores", "2", "--configfile", "board.yaml", "--config", "registry_extra=extra.yaml",
               *NO_MLFLOW]  # the board reads the tables, not MLflow
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "leaderboard: results/tables/boardtest/leaderboard.md" in done.stderr  # the run's closing lines
    frame = pd.read_csv(tmp_path / "results/tables/boardtest/leaderboard.csv")
    assert sorted(frame["dataset"].unique()) == ["synthetic", "synthetic2"]
    counts = frame.groupby(["dataset", "system"]).size()
    assert (counts == 1).all() and len(counts) == 6
    assert set(frame["system"]) == {"ranknet [first]", "listnet [first]", "pointwise [first]"}
    assert (frame.groupby("dataset")["top_group"].sum() >= 1).all()
    # each system's minimum detectable difference against the best, from the per-query files: the
    # paired t-test's power there, written out from the noncentral t, is .8
    from scipy import stats

    for dataset, board in frame.groupby("dataset"):
        runs = tmp_path / "results/runs/boardtest" / dataset
        per_query = {path.parent.name: pd.read_csv(path).set_index(["fold", "qid"])["ndcg@10"]
                     for path in runs.rglob("metrics.per_query.test.csv") if path.parent.name in METHODS}
        best = board.loc[board["rank"].idxmin(), "system"].split(" [")[0]
        for row in board[board["system"] != board.loc[board["rank"].idxmin(), "system"]].itertuples():
            d = (per_query[row.system.split(" [")[0]] - per_query[best]).to_numpy()
            n, sd = len(d), np.std(d, ddof=1)
            critical, nc = stats.t.ppf(0.975, n - 1), row.mdd * np.sqrt(n) / sd
            assert stats.nct.sf(critical, n - 1, nc) + stats.nct.cdf(-critical, n - 1, nc) == pytest.approx(0.8)
        # the data set's MDD: the median over every tested pair, as its table's (MDD) row
        tested = pd.read_csv(tmp_path / f"results/tables/boardtest/{dataset}.pairs.csv")
        median = tested.loc[tested["metric"] == "ndcg@10", "mdd"].median()
        assert board["dataset_mdd"].iloc[0] == pytest.approx(median)
        table_md = (tmp_path / f"results/tables/boardtest/{dataset}.md").read_text()
        assert f"Power: MDD {median:.4f} (" in table_md
    board_md = (tmp_path / "results/tables/boardtest/leaderboard.md").read_text()
    assert "cannot reliably be told apart" in board_md
    md = (tmp_path / "results/tables/boardtest/leaderboard.md").read_text()
    assert md.count("## synthetic") == 2
    assert (tmp_path / "results/plots/boardtest/leaderboard.png").stat().st_size > 1000


@pytest.mark.parametrize("report, message", [
    ({"compare": "all_pairs", "leaderboard": {"metric": "ndcg@3"}}, "report.leaderboard.metric"),
    ({"compare": "baseline", "leaderboard": {"metric": "ndcg@10"}}, "all_pairs"),
])
def test_config_check_refuses_a_leaderboard_it_cannot_make(report, message):
    import yaml

    from rankstudy.pipeline.config import check_config
    from rankstudy.pipeline.errors import ConfigError

    repo = Path(__file__).resolve().parents[1]
    config = yaml.safe_load((repo / "config/config.yaml").read_text())
    config["report"].update(report)
    with pytest.raises(ConfigError, match=message):
        check_config(config, repo)


def test_default_and_tuned_twins_side_by_side_with_the_gain_and_its_interval(tmp_path):
    """Board v2: a system run untuned and as NAME-tuned shows both pooled means from the pair's row,
    the gain (tuned - default), its interval with its level, and the tuning's trials and CPU-seconds;
    in the CSV too."""
    means = {"lm [first]": 0.50, "lm-tuned [first]": 0.55, "rn [first]": 0.45, "rn-tuned [first]": 0.449}
    tested = pd.DataFrame([
        # the pairs file's diff is system - other: lm's pair lists the default first, rn's the tuned first
        {"metric": METRIC, "system": "lm [first]", "other": "lm-tuned [first]", "winner": "lm-tuned [first]",
         "mean_system": 0.49, "mean_other": 0.54, "diff": -0.05, "diff_lo": -0.08, "diff_hi": -0.02,
         "ci_level": 0.99, "sig_rand": True, "decided_by": "rand"},
        {"metric": METRIC, "system": "rn-tuned [first]", "other": "rn [first]", "winner": "",
         "mean_system": 0.448, "mean_other": 0.449, "diff": -0.001, "diff_lo": -0.01, "diff_hi": 0.008,
         "ci_level": 0.9964, "sig_rand": False, "decided_by": "rand"},
    ] + [{"metric": METRIC, "system": a, "other": b, "winner": ""}  # the other pairs: no difference found
         for a, b in [("lm [first]", "rn [first]"), ("lm [first]", "rn-tuned [first]"),
                      ("lm-tuned [first]", "rn [first]"), ("lm-tuned [first]", "rn-tuned [first]")]])
    cpu = pd.DataFrame({"system": list(means), "train_job_seconds": [1.0, 9.0, 1.0, 5.0],
                        "tuning_cpu_seconds": [np.nan, 8.0, np.nan, 4.5], "tuning_trials": [np.nan, 20, np.nan, 7]})
    board = lb.dataset_board(numbers(means), tested, cpu, METRIC)
    found = lb.tuning_gains(board, tested, cpu, METRIC)
    gains = found.set_index("system")
    assert list(gains.index) == ["lm [first]", "rn [first]"]  # in the board's order of the tuned systems
    assert gains.loc["lm [first]", ["default", "tuned", "gain", "gain_lo", "gain_hi"]].tolist() == pytest.approx(
        [0.49, 0.54, 0.05, 0.02, 0.08])
    assert gains.loc["rn [first]", ["default", "tuned", "gain", "gain_lo", "gain_hi"]].tolist() == pytest.approx(
        [0.449, 0.448, -0.001, -0.01, 0.008])
    assert gains["gain_sig"].tolist() == [True, False] and gains["tuning_cpu_seconds"].tolist() == [8.0, 4.5]
    written = lb.write_leaderboard({"D": board}, METRIC, tmp_path / "leaderboard", "cap", alpha=0.05, folds=[1],
                                   gains={"D": found})
    text = (tmp_path / "leaderboard.md").read_text()
    assert "tuning changed 1 of 2 systems significantly (1 better, 0 worse, by the randomization test)" in text
    cells = lambda row: [c.strip() for c in row.split("|")[1:-1]]  # noqa: E731
    rows = {cells(line)[0]: cells(line)[1:] for line in text.splitlines() if line.startswith("| lm [") or
            line.startswith("| rn [")}
    assert rows["lm [first]"][:4] == ["0.4900", "0.5400", "+0.0500 ▲", "[+0.0200, +0.0800] at 99.0%"]
    assert rows["rn [first]"][:4] == ["0.4490", "0.4480", "-0.0010", "[-0.0100, +0.0080] at 99.64%"]
    assert gains["tuning_trials"].tolist() == [20, 7]
    csv = pd.read_csv(tmp_path / "leaderboard.csv").set_index("system")
    assert csv.loc["lm-tuned [first]", "tuned_from"] == "lm [first]"
    assert csv.loc["lm-tuned [first]", ["pooled_default", "pooled_tuned"]].tolist() == [0.49, 0.54]
    assert csv.loc["lm-tuned [first]", "gain"] == 0.54 - 0.49  # the same means, exactly
    assert np.isnan(csv.loc["lm [first]", "gain"])
    assert "gain from tuning" in (tmp_path / "leaderboard.html").read_text() and len(written) == 3
    # a pairs file from before the pooled means: one line saying so, not a gain from other means
    with pytest.raises(ValueError, match="mean_system / mean_other.*rerun its tables job"):
        lb.tuning_gains(board, tested.drop(columns=["mean_system", "mean_other"]), cpu, METRIC)


def test_a_board_without_twins_keeps_its_columns():
    tested = pairs({("a", "b"): ""})
    board = lb.dataset_board(numbers({"a": 0.5, "b": 0.4}), tested, None, METRIC)
    assert lb.tuning_gains(board, tested, None, METRIC).empty
    assert tuple(lb.leaderboard_frame({"D": board}, METRIC).columns) == lb.COLUMNS


def per_query_frame(offsets: dict[str, float], sizes=(12, 36), seed: int = 0) -> pd.DataFrame:
    """Test metrics per query: folds of unequal sizes (so a fold mean is not the pooled mean), each
    system a shared base plus its offset plus noise; one query without a relevant document (NaN)."""
    rng = np.random.default_rng(seed)
    folds = np.repeat(np.arange(1, len(sizes) + 1), sizes)
    qid = np.arange(len(folds))
    base = rng.uniform(0.2, 0.7, size=len(folds))
    base[np.arange(len(folds)) >= sizes[0]] -= 0.1
    frames = []
    for system, offset in offsets.items():
        values = np.clip(base + offset + rng.normal(0, 0.05, size=len(folds)), 0, 1)
        values[3] = np.nan  # dropped by the no-relevant-document policy, for every system
        frames.append(pd.DataFrame({"system": system, "fold": folds, "qid": qid, METRIC: values, "map": values / 2}))
    return pd.concat(frames, ignore_index=True)


def from_the_tables(per_query: pd.DataFrame, baseline: str):
    """What the tables job writes for the leaderboard: the long numbers and every pair, read back."""

    systems = list(pd.unique(per_query["system"]))
    table = comparison.comparison_table(per_query, [METRIC, "map"], baseline, n_resamples=200)
    pairs = comparison.all_pairs_comparison(per_query, [METRIC, "map"], systems, n_resamples=200)
    return table, comparison.long_numbers(table, [METRIC, "map"]), pairs


def test_one_mdd_per_data_set_on_the_page_its_table_and_the_heat_map(tmp_path):
    """Today's board said .0295 on the page, .0333 in the table and '0.010' on the heat map for one
    run: now one function, one number (the median over every tested pair), and one definition."""
    from rankstudy.reporting import tables

    per_query = per_query_frame({"a": 0.0, "b": 0.02, "c": -0.03, "d": 0.1})
    table, numbers, pairs = from_the_tables(per_query, "a")
    expected = f"{pairs.loc[pairs['metric'] == METRIC, 'mdd'].median():.4f}"
    against_best = lb.dataset_board(numbers, pairs, None, METRIC)["mdd"].median()
    assert f"{against_best:.4f}" != expected  # so the test tells the two definitions apart
    caption = "D: test split." + tables.power_sentence(table, METRIC, pairs)
    tables.write_tables(table, [METRIC, "map"], tmp_path / "D", caption, pairs=pairs, compare="all_pairs")
    table_md = (tmp_path / "D.md").read_text()
    board = lb.dataset_board(numbers, pairs, None, METRIC)
    lb.write_leaderboard({"D": board}, METRIC, tmp_path / "lb", "cap", alpha=0.05, folds=[1, 2])
    page = (tmp_path / "lb.md").read_text()
    # the one number: in the table's (MDD) row, on the page, under the heat map's data set
    assert re.search(rf"\| +\| \(MDD\) +\| +{expected} \|", table_md)
    assert expected in lb.power_line(board, METRIC) and expected in page
    assert lb.heatmap_notes({"D": board})["D"].endswith(f"; MDD {expected}")
    assert lb.dataset_power(board).mdd == pytest.approx(float(expected), abs=5e-5)
    assert f"Power: MDD {expected} (" in table_md and f"systems in the top group. MDD {expected} (" in page
    # its definition named once on each page
    for text in (page, table_md):
        assert text.count("minimum detectable difference") == 1, text


def test_the_gain_is_tuned_minus_default_of_one_set_of_pooled_means():
    """Default, tuned and gain from the pair's pooled means (every test query of all folds at once),
    not fold means beside a pooled paired gain: gain = tuned - default exactly."""
    per_query = per_query_frame({"lm [first]": 0.0, "lm-tuned [first]": 0.03, "rn [first]": -0.02,
                                 "rn-tuned [first]": -0.025})
    _, numbers, pairs = from_the_tables(per_query, "lm [first]")
    board = lb.dataset_board(numbers, pairs, None, METRIC)
    gains = lb.tuning_gains(board, pairs, None, METRIC).set_index("system")
    for system in ("lm [first]", "rn [first]"):
        tuned = system.replace(" [", "-tuned [")
        values = per_query.pivot(index="qid", columns="system", values=METRIC)[[system, tuned]].dropna()
        row = gains.loc[system]
        assert row["default"] == pytest.approx(values[system].mean(), rel=1e-14)
        assert row["tuned"] == pytest.approx(values[tuned].mean(), rel=1e-14)
        assert row["gain"] == row["tuned"] - row["default"]  # the same means, exactly
        assert row["gain"] == pytest.approx((values[tuned] - values[system]).mean(), abs=1e-12)  # the pair's diff
        assert row["gain_lo"] < row["gain"] < row["gain_hi"]
        fold_mean = board.set_index("system").loc[system, "mean"]
        assert abs(fold_mean - row["default"]) > 1e-3  # unequal folds: the fold mean is another mean


def test_each_gain_interval_names_its_level_and_the_test_it_agrees_with(tmp_path):
    """The interval is the t-test's at its Holm level (printed with it); the ▲/▼ marks are the
    randomization test's, and a row where the two disagree says so instead of the legend
    claiming the interval excludes 0 exactly where ▲/▼ are."""
    assert [lb.level_text(v) for v in (0.95, 0.9964, 1 - 0.05 / 1770, 0.99)] == ["95.0%", "99.64%", "99.9972%",
                                                                                 "99.0%"]
    means = {"a": 0.50, "a-tuned": 0.52, "b": 0.45, "b-tuned": 0.44}
    rows = [  # a: the randomization test finds the gain, the t-interval reaches 0; b: both find a loss
        {"metric": METRIC, "system": "a-tuned", "other": "a", "winner": "a-tuned", "mean_system": 0.52,
         "mean_other": 0.50, "diff": 0.02, "diff_lo": -0.001, "diff_hi": 0.041, "ci_level": 0.9964,
         "sig_rand": True, "decided_by": "rand"},
        {"metric": METRIC, "system": "b-tuned", "other": "b", "winner": "b", "mean_system": 0.44,
         "mean_other": 0.45, "diff": -0.01, "diff_lo": -0.019, "diff_hi": -0.001, "ci_level": 0.9983,
         "sig_rand": True, "decided_by": "rand"}]
    others = [{"metric": METRIC, "system": x, "other": y, "winner": ""}
              for x, y in [("a", "b"), ("a", "b-tuned"), ("a-tuned", "b"), ("a-tuned", "b-tuned")]]
    tested = pd.DataFrame(rows + others)
    board = lb.dataset_board(numbers(means), tested, None, METRIC)
    gains = lb.tuning_gains(board, tested, None, METRIC)
    assert lb.interval_disagrees(gains).tolist() == [True, False]
    lb.write_leaderboard({"D": board}, METRIC, tmp_path / "lb", "cap", alpha=0.05, folds=[1], gains={"D": gains})
    md = (tmp_path / "lb.md").read_text()
    assert "[-0.0010, +0.0410] at 99.64% ≠" in md and "[-0.0190, -0.0010] at 99.83% |" in md
    assert "+0.0200 ▲" in md and "-0.0100 ▼" in md
    assert "exactly where ▲/▼" not in md
    assert "it excludes 0 exactly where the Holm-adjusted paired t-test has p < 0.05" in md
    assert "▲/▼: the Holm-adjusted randomization test" in md and "≠: the t-interval and the randomization test" in md


def test_the_legend_says_whose_defaults_the_board_runs():
    """rankstudy's defaults, not the libraries': LightGBM's and XGBoost's learning rates, rounds and
    early stopping, CatBoost's l2_leaf_reg; a parameter a method sets itself is not a default."""
    from rankstudy.reporting.defaults import defaults_sentence

    methods = {"lambdamart": {"kind": "lambdamart"}, "xgb": {"kind": "xgboost", "params": {"objective": "rank:ndcg"}},
               "cb": {"kind": "catboost", "params": {"loss": "YetiRank"}},
               "ranknet": {"kind": "linear", "params": {"loss": "ranknet"}},
               "cb-tuned": {"kind": "catboost", "tune": {"trials": 3}}}
    sentence = defaults_sentence(methods)
    assert "lambdamart (LightGBM) n_estimators 300 (100), learning_rate 0.05 (0.1), early_stopping_rounds 30 (none)" \
        in sentence
    assert "xgboost (XGBoost) n_estimators 300 (10), learning_rate 0.05 (0.3), early_stopping_rounds 30 (none)" \
        in sentence
    assert "catboost (CatBoost) l2_leaf_reg 3.0 (3, but 0 (stored as 1e-20) for YetiRank" in sentence
    assert "linear" not in sentence and "num_leaves" not in sentence  # LightGBM's own 31 is rankstudy's
    own = defaults_sentence({"lambdamart": {"kind": "lambdamart", "params": {"learning_rate": 0.1}}})
    assert "learning_rate" not in own and "n_estimators 300 (100)" in own
    assert defaults_sentence({"ranknet": {"kind": "linear"}}) == ""
    legend = lb.legend(METRIC, 0.05, [1], False, False, defaults=sentence)
    assert "Default: each method at rankstudy's defaults" in legend
