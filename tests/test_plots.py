"""The @k plots: bars over folds, and systems with equal curves still visible."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer

from matplotlib.backends.backend_agg import FigureCanvasAgg

from rankstudy.reporting.plots import INTERVAL_TEXT, ndcg_at_k_figure, panel_groups

K = 10


def per_query_frame(systems: dict[str, float], n_folds: int = 3, n_queries: int = 7, seed: int = 0) -> pd.DataFrame:
    """Per-query metrics of each system: its level plus noise that differs by fold, so the fold
    means spread. Systems with the same level get the same values (an exact copy)."""
    rng = np.random.default_rng(seed)
    shared = {level: rng.uniform(-0.1, 0.1, size=(n_folds * n_queries, 2 * K)) for level in set(systems.values())}
    fold_shift = np.repeat(np.linspace(-0.05, 0.05, n_folds), n_queries)[:, None]
    frames = []
    for system, level in systems.items():
        values = np.clip(level + shared[level] + fold_shift, 0, 1)
        frame = pd.DataFrame(values, columns=[f"ndcg@{k}" for k in range(1, K + 1)] + [f"p@{k}" for k in range(1, K + 1)])
        frame.insert(0, "qid", np.arange(n_folds * n_queries))
        frame.insert(0, "fold", np.repeat(np.arange(1, n_folds + 1), n_queries))
        method, featureset = system.split(" [")
        frame.insert(0, "featureset", featureset.rstrip("]"))
        frame.insert(0, "method", method)
        frame.insert(0, "system", system)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def errorbars(fig) -> dict[str, ErrorbarContainer]:
    return {c.get_label(): c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)}


def hand_fold_stats(frame: pd.DataFrame, system: str, column: str) -> tuple[float, float]:
    """Mean and std (ddof=1) over folds of the fold's mean over its queries, by plain loops."""
    rows = frame[frame["system"] == system]
    fold_means = [rows.loc[rows["fold"] == f, column].mean() for f in sorted(rows["fold"].unique())]
    mean = sum(fold_means) / len(fold_means)
    return mean, (sum((m - mean) ** 2 for m in fold_means) / (len(fold_means) - 1)) ** 0.5


SYSTEMS = {"ranknet [first]": 0.5, "ranknet [rho0.10]": 0.5, "lambdamart [first]": 0.6, "pointwise [first]": 0.3}


@pytest.mark.parametrize("metric", ["ndcg", "p"])
def test_each_system_has_bars_of_one_std_over_folds(metric):
    frame = per_query_frame(SYSTEMS)
    bars = errorbars(ndcg_at_k_figure(frame, metric=metric))
    assert set(bars) == set(SYSTEMS)
    for system, container in bars.items():
        data_line, _, (segments,) = container.lines
        assert container.has_yerr and not container.has_xerr
        for k, ((x_low, low), (x_high, high)), y in zip(range(1, K + 1), segments.get_segments(),
                                                        data_line.get_ydata()):
            mean, std = hand_fold_stats(frame, system, f"{metric}@{k}")
            assert std > 0.005  # the fold shift spreads the fold means
            assert y == pytest.approx(mean, abs=1e-12)
            assert x_low == x_high and (low, high) == pytest.approx((mean - std, mean + std), abs=1e-12)


def test_systems_with_equal_curves_sit_side_by_side_near_their_k():
    """'ranknet [first]' and 'ranknet [rho0.10]' are exact copies: drawn at the same x, one
    would hide the other."""
    bars = errorbars(ndcg_at_k_figure(per_query_frame(SYSTEMS)))
    xs = {system: c.lines[0].get_xdata() for system, c in bars.items()}
    np.testing.assert_array_equal(bars["ranknet [first]"].lines[0].get_ydata(),
                                  bars["ranknet [rho0.10]"].lines[0].get_ydata())
    assert np.all(np.abs(xs["ranknet [first]"] - xs["ranknet [rho0.10]"]) > 0.02)
    for x in xs.values():
        assert np.all(np.abs(x - np.arange(1, K + 1)) < 0.3)  # still read as its k
    # one marker shape per method, one marker fill per feature set: copies differ at a glance
    markers = {s: c.lines[0].get_marker() for s, c in bars.items()}
    assert markers["ranknet [first]"] == markers["ranknet [rho0.10]"] != markers["lambdamart [first]"]
    fills = {s: c.lines[0].get_fillstyle() for s, c in bars.items()}
    assert fills["ranknet [first]"] != fills["ranknet [rho0.10]"]


def test_the_axis_and_legend_say_what_the_bars_are():
    ax = ndcg_at_k_figure(per_query_frame(SYSTEMS)).axes[0]
    assert INTERVAL_TEXT in ax.get_ylabel() and ax.get_legend().get_title().get_text() == INTERVAL_TEXT
    assert "std over folds" in INTERVAL_TEXT


def test_one_fold_draws_the_means_without_bars():
    frame = per_query_frame(SYSTEMS, n_folds=1)
    for container in errorbars(ndcg_at_k_figure(frame)).values():
        assert np.isfinite(container.lines[0].get_ydata()).all()
        assert all(len(segment) == 0 for segment in container.lines[2][0].get_segments())  # std NaN: no bar


def test_a_method_keeps_its_colour_and_marker_when_a_run_picks_a_subset_of_the_study():
    palette = ["ranknet", "lambdamart", "pointwise"]
    look = lambda c: (c.lines[0].get_color(), c.lines[0].get_marker())  # noqa: E731
    whole = errorbars(ndcg_at_k_figure(per_query_frame(SYSTEMS), palette=palette))
    alone = errorbars(ndcg_at_k_figure(per_query_frame({"pointwise [first]": 0.3}), palette=palette))
    assert look(alone["pointwise [first]"]) == look(whole["pointwise [first]"])
    without = errorbars(ndcg_at_k_figure(per_query_frame({"pointwise [first]": 0.3})))  # no palette: by position
    assert look(without["pointwise [first]"]) != look(whole["pointwise [first]"])
    assert len({look(c)[0] for s, c in whole.items() if s != "ranknet [rho0.10]"}) == 3


# ---------------------------------------------------------------- many systems


KINDS = {"pointwise": "linear", "ranknet": "linear", "ranksvm": "linear", "listnet": "linear", "listmle": "linear",
         "tran_multiclass": "linear", "tran_regression": "linear", "tran_rpl": "linear", "tran_wpll": "linear",
         "tran_smoothed_ndcg": "linear", "svm_map": "structsvm", "svm_ndcg": "structsvm", "dorm": "structsvm",
         "cond_mle": "conditional", "cond_convex": "conditional", "structrank": "structrank",
         "lambdamart": "lambdamart", "mart": "mart", "random_forest": "random_forest", "mcrank": "mcrank",
         "coordinate_ascent": "coordinate_ascent", "adarank_ndcg": "adarank", "adarank_map": "adarank",
         "rankboost": "rankboost", "mlp_softmax": "neural", "mlp_ndcgloss2pp": "neural", "xgb_ndcg": "xgboost",
         "xgb_pairwise": "xgboost", "catboost_yeti": "catboost", "catboost_lm": "catboost"}


def test_thirty_systems_are_small_multiples_each_readable():
    """The 26-line plot was a rainbow: over 12 systems, panels of at most 8 systems grouped by
    family, the rest grey behind them, each coloured system unique in its panel by colour,
    marker and line style, each legend under its own panel, clear of the others."""
    rng = np.random.default_rng(1)
    systems = {f"{m} [first]": round(0.45 + 0.002 * i + rng.normal(0, 0.004), 4) for i, m in enumerate(KINDS)}
    fig = ndcg_at_k_figure(per_query_frame(systems, n_folds=3, n_queries=5), families=KINDS)
    FigureCanvasAgg(fig).draw()
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.containers]
    assert 4 <= len(panels) <= 6 and fig.get_size_inches()[1] >= 4 * -(-len(panels) // 2)  # 4 in. a row of two
    shown = []
    for ax in panels:
        bars = {c.get_label(): c.lines[0] for c in ax.containers if isinstance(c, ErrorbarContainer)}
        assert 1 <= len(bars) <= 8
        looks = {(line.get_color(), line.get_marker(), str(line.get_linestyle())) for line in bars.values()}
        assert len(looks) == len(bars) and len({look[0] for look in looks}) == len(bars)  # distinct colours
        grey = [line for line in ax.get_lines() if line.get_color() == "#c8c8c8"]
        assert len(grey) == len(systems) - len(bars)  # every other system, for context
        shown += list(bars)
        legend = ax.get_legend().get_window_extent()
        assert legend.y1 <= ax.get_window_extent().y0  # under its panel
        assert not any(legend.overlaps(other.get_window_extent()) for other in panels if other is not ax)
    assert shown == list(systems)  # each once, in order
    # whole families where they fit: the structural SVMs and the two conditional models share a panel
    titles = [ax.get_title() for ax in panels]
    assert any("structsvm" in t and "conditional" in t for t in titles) and titles[0] == "linear"


def test_panel_groups_pack_families_and_split_large_ones():
    family = {s: s[0] for s in ["a1", "a2", "a3", "b1", "b2", "c1", "c2", "c3", "c4"]}
    assert panel_groups(list(family), family, size=4) == [["a1", "a2", "a3"], ["b1", "b2"], ["c1", "c2", "c3", "c4"]]
    assert panel_groups(list(family), family, size=5) == [["a1", "a2", "a3", "b1", "b2"], ["c1", "c2", "c3", "c4"]]
    assert panel_groups(list(family), family, size=2) == [["a1", "a2"], ["a3"], ["b1", "b2"], ["c1", "c2"],
                                                          ["c3", "c4"]]


def test_twelve_systems_stay_one_panel():
    systems = {f"m{i} [first]": 0.3 + 0.01 * i for i in range(12)}
    assert len(ndcg_at_k_figure(per_query_frame(systems)).axes) == 1


def test_a_large_study_palette_does_not_blur_the_colours_of_the_methods_plotted():
    """The leaderboard's palette has 28 methods: evenly spaced hues gave ten adjacent methods ten
    near reds and blues. Over 20 methods in the palette, the plotted ones get tab10's colours."""
    from matplotlib.colors import to_rgb

    palette = [f"m{i}" for i in range(28)]
    systems = {f"m{i} [first]": 0.3 + 0.01 * i for i in range(10)}
    bars = errorbars(ndcg_at_k_figure(per_query_frame(systems), palette=palette))
    rgb = np.array([to_rgb(c.lines[0].get_color()) for c in bars.values()])
    gaps = np.linalg.norm(rgb[:, None] - rgb[None], axis=2)[np.triu_indices(len(rgb), 1)]
    assert gaps.min() > 0.22  # in RGB: tab10's closest pair 0.26 apart, the 28-hue palette's neighbours 0.18
    small = errorbars(ndcg_at_k_figure(per_query_frame(systems), palette=palette[:12]))  # <= 20: kept stable
    assert small["m3 [first]"].lines[0].get_color() == ndcg_at_k_figure(
        per_query_frame({"m3 [first]": 0.3}), palette=palette[:12]).axes[0].containers[0].lines[0].get_color()
