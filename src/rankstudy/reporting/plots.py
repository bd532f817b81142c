"""Figures of the comparison: mean NDCG@k and P@k curves of every system, with bars over folds.

Figures are drawn on an explicit Agg canvas (no pyplot), so no global backend
or figure state is touched and the functions are safe in headless workers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rankstudy.util.atomic import atomic_path


def mean_over_folds(per_query: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Per system (input order) and column: mean over folds of the per-fold query mean, NaN skipped."""
    fold_means = per_query.groupby(["system", "fold"], sort=False)[columns].mean()
    return fold_means.groupby(level="system", sort=False).mean()


def save_figure(fig: Figure, out_png: Path) -> Path:
    out_png = Path(out_png)
    FigureCanvasAgg(fig)
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=150, bbox_inches="tight")
    return out_png


LINE_STYLES = ["-", "--", ":", "-.", (0, (5, 1, 1, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (8, 2))]
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]
FILL_STYLES = ["full", "none", "left", "bottom", "right", "top"]


def method_colors(methods: list[str]) -> dict[str, tuple]:
    """One distinct colour per method: tab10 up to 10 methods, tab20 up to 20, else evenly
    spaced hues (a colour cycle shorter than the methods would give two methods one colour)."""
    if len(methods) <= 10:
        cmap, n = colormaps["tab10"], 10
    elif len(methods) <= 20:
        cmap, n = colormaps["tab20"], 20
    else:
        cmap, n = colormaps["hsv"], len(methods) + 1
    return {m: cmap(i / n if cmap.N > 20 else i) for i, m in enumerate(methods)}


AT_K_LABELS = {"ndcg": "NDCG@k", "p": "P@k"}
# what the bars of an @k plot show: named on the axis, in the legend and in the report captions
INTERVAL_TEXT = "bars: ± 1 std over folds"


def fold_mean_std(per_query: pd.DataFrame, columns: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per system (input order) and column: the mean over folds of the per-fold query mean, and
    the standard deviation (ddof=1) of those fold means, as the tables give them; NaN skipped,
    the std NaN for one fold."""
    fold_means = per_query.groupby(["system", "fold"], sort=False)[columns].mean()
    by_system = fold_means.groupby(level="system", sort=False)
    return by_system.mean(), by_system.std(ddof=1)


def dodge_offsets(n: int, width: float = 0.6) -> np.ndarray:
    """Horizontal offsets of ``n`` series around each x (spread over at most ``width``, at most
    0.12 apart), so series with the same values sit side by side instead of on top of each other."""
    step = min(0.12, width / max(n, 1))
    return (np.arange(n) - (n - 1) / 2) * step


def ndcg_at_k_figure(per_query: pd.DataFrame, title: str = "", k_max: int = 10, metric: str = "ndcg",
                     palette: list[str] | None = None) -> Figure:
    """One line per system of the mean over folds of ``metric``@k (``ndcg`` or ``p``) for
    k = 1..k_max (cf. Huang & Frey 2008, Fig. 4), with bars of ± one standard deviation over
    folds: one colour and marker shape per method, one line style and marker fill per feature
    set, the legend outside the axes. Each system's points are shifted a little sideways (:func:`dodge_offsets`), so
    systems with equal curves stay visible side by side. Uses the ``method`` and ``featureset``
    columns when present, else each system is its own method. ``palette``: every method of the
    study in its order, so that a method keeps its colour and marker in every plot of the study,
    whichever of its methods a run picked (default: the methods plotted, in their order)."""
    columns = [f"{metric}@{k}" for k in range(1, k_max + 1)]
    missing = [c for c in columns if c not in per_query.columns]
    if missing:
        raise ValueError(f"a {metric}@k plot needs columns {missing}, absent from the per-query frame")
    means, stds = fold_mean_std(per_query, columns)
    if {"method", "featureset"} <= set(per_query.columns):
        parts = per_query.drop_duplicates("system").set_index("system")[["method", "featureset"]]
    else:
        parts = pd.DataFrame({"method": means.index, "featureset": ""}, index=means.index)
    methods = list(dict.fromkeys([*(palette or []), *parts.loc[means.index, "method"]]))
    featuresets = list(dict.fromkeys(parts.loc[means.index, "featureset"]))
    colors = method_colors(methods)
    ks = np.arange(1, k_max + 1)
    fig = Figure(figsize=(7.5, 4.0))
    ax = fig.add_subplot()
    for offset, (system, values) in zip(dodge_offsets(len(means)), means.iterrows()):
        method, featureset = parts.loc[system, "method"], parts.loc[system, "featureset"]
        m, style = methods.index(method), featuresets.index(featureset)
        # thin bars with small caps and slightly see-through lines: crossing curves stay readable
        ax.errorbar(ks + offset, values.to_numpy(), yerr=stds.loc[system].to_numpy(), color=colors[method],
                    linestyle=LINE_STYLES[style % len(LINE_STYLES)], marker=MARKERS[m % len(MARKERS)],
                    fillstyle=FILL_STYLES[style % len(FILL_STYLES)], markersize=4, linewidth=1.2, alpha=0.85, elinewidth=0.8, capsize=2.0, capthick=0.8,
                    label=str(system))
    ax.set_xlabel("k")
    ax.set_ylabel(f"mean {AT_K_LABELS.get(metric, metric + '@k')} (test)\n{INTERVAL_TEXT}")
    ax.set_xticks(ks)
    ax.grid(True, alpha=0.3)
    if title:
        ax.set_title(title)
    # outside the axes, so it never hides a curve; bbox_inches="tight" keeps it in the file
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
              title=INTERVAL_TEXT, title_fontsize="small")
    return fig


def ndcg_at_k_plot(per_query: pd.DataFrame, out_png: Path, title: str = "", k_max: int = 10,
                   metric: str = "ndcg", palette: list[str] | None = None) -> Path:
    """:func:`ndcg_at_k_figure` written to ``out_png``."""
    return save_figure(ndcg_at_k_figure(per_query, title, k_max, metric, palette), out_png)


def leaderboard_figure(means: pd.DataFrame, ranks: pd.DataFrame, top: pd.DataFrame, metric: str,
                       title: str = "") -> Figure:
    """Heat map of systems (rows, in the given order) x data sets (columns) of ``metric``: each
    cell shows the mean and the rank, bold in the top group; its colour is the value's place
    between the lowest and the highest system of that data set (data sets differ in scale, so
    one shared scale would colour data sets instead of systems); grey where a system did not run.
    ``means``, ``ranks`` and ``top`` share index and columns."""
    values = means.to_numpy(dtype=float)
    low, high = np.nanmin(values, axis=0), np.nanmax(values, axis=0)
    span = np.where(high > low, high - low, 1.0)
    relative = (values - low) / span
    n_rows, n_cols = values.shape
    fig = Figure(figsize=(2.0 + 1.6 * n_cols, 1.2 + 0.32 * n_rows))
    ax = fig.add_subplot()
    cmap = colormaps["viridis"].with_extremes(bad="#d9d9d9")
    image = ax.imshow(np.ma.masked_invalid(relative), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(n_rows):
        for j in range(n_cols):
            if np.isnan(values[i, j]):
                ax.text(j, i, "–", ha="center", va="center", fontsize=7)
                continue
            rank = float(ranks.iat[i, j])
            text = f"{values[i, j]:.3f} ({rank:g})" if rank.is_integer() else f"{values[i, j]:.3f} ({rank:.1f})"
            ax.text(j, i, text, ha="center", va="center", fontsize=7,
                    color="black" if relative[i, j] > 0.6 else "white",
                    fontweight="bold" if bool(top.iat[i, j]) else "normal")
    ax.set_xticks(range(n_cols), [str(c) for c in means.columns])
    ax.set_yticks(range(n_rows), [str(r) for r in means.index], fontsize=8)
    ax.xaxis.tick_top()
    bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    bar.set_label(f"test {metric}: lowest (0) to highest (1) system of the data set", fontsize=7)
    if title:
        ax.set_title(title, fontsize=9, pad=18)
    return fig


def leaderboard_plot(means: pd.DataFrame, ranks: pd.DataFrame, top: pd.DataFrame, metric: str, out_png: Path,
                     title: str = "") -> Path:
    """:func:`leaderboard_figure` written to ``out_png``."""
    return save_figure(leaderboard_figure(means, ranks, top, metric, title), out_png)
