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
from matplotlib.cm import ScalarMappable
from matplotlib.colors import ListedColormap, Normalize, to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Patch

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


# more systems than this in one @k plot and it becomes small multiples (a rainbow of 26 lines
# reads as nothing): panels of at most PANEL_SYSTEMS systems, every other system grey behind them
MAX_ONE_PANEL = 12
PANEL_SYSTEMS = 8


def panel_groups(systems: list[str], family: dict[str, str], size: int = PANEL_SYSTEMS) -> list[list[str]]:
    """``systems`` (in order) in panels of at most ``size``: consecutive families (``family``:
    system -> its family, e.g. the method's kind) packed together, a family larger than a panel
    split, so a panel holds whole families where it can."""
    runs: list[list[str]] = []
    for system in systems:
        if runs and family.get(system) == family.get(runs[-1][-1]) and len(runs[-1]) < size:
            runs[-1].append(system)
        else:
            runs.append([system])
    panels: list[list[str]] = []
    for run in runs:
        if panels and len(panels[-1]) + len(run) <= size:
            panels[-1] += run
        else:
            panels.append(list(run))
    return panels


def ndcg_at_k_figure(per_query: pd.DataFrame, title: str = "", k_max: int = 10, metric: str = "ndcg",
                     palette: list[str] | None = None, families: dict[str, str] | None = None) -> Figure:
    """One line per system of the mean over folds of ``metric``@k (``ndcg`` or ``p``) for
    k = 1..k_max (cf. Huang & Frey 2008, Fig. 4), with bars of ± one standard deviation over
    folds: one colour and marker shape per method, one line style and marker fill per feature
    set, the legend outside the axes. Each system's points are shifted a little sideways (:func:`dodge_offsets`), so
    systems with equal curves stay visible side by side. Uses the ``method`` and ``featureset``
    columns when present, else each system is its own method. ``palette``: every method of the
    study in its order, so that a method keeps its colour and marker in every plot of the study,
    whichever of its methods a run picked (default: the methods plotted, in their order).

    Over :data:`MAX_ONE_PANEL` systems: small multiples instead (:func:`small_multiples`), the
    systems grouped by ``families`` (method -> family, e.g. its kind)."""
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
    if len(means) > MAX_ONE_PANEL:
        family = {s: (families or {}).get(parts.loc[s, "method"], parts.loc[s, "method"]) for s in means.index}
        return small_multiples(means, stds, parts, featuresets, family, title, metric)
    plotted = list(dict.fromkeys(parts.loc[means.index, "method"]))
    # a study's palette of over 20 methods has no distinct colour for each (evenly spaced hues
    # blur: a run of 10 adjacent ones is all reds and blues): then the plotted methods get tab10/20
    colors = method_colors(methods if len(methods) <= 20 else plotted)
    methods = methods if len(methods) <= 20 else plotted  # markers follow the same order
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


def small_multiples(means: pd.DataFrame, stds: pd.DataFrame, parts: pd.DataFrame, featuresets: list[str],
                    family: dict[str, str], title: str, metric: str) -> Figure:
    """The @k curves of many systems as panels of at most :data:`PANEL_SYSTEMS` (two a row, one
    y scale): each panel's systems in colour with their bars, told apart by colour, marker and
    (per feature set) line style, with a legend under the panel; every other system a thin grey
    line behind them, so each panel still shows where its systems stand among all."""
    panels = panel_groups(list(means.index), family)
    n_cols = 2
    n_rows = -(-len(panels) // n_cols)
    fig = Figure(figsize=(12.0, 4.3 * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, sharey=True, squeeze=False).ravel()
    ks = np.arange(1, means.shape[1] + 1)
    colors = colormaps["tab10"]
    low = np.nanmin((means - stds.fillna(0)).to_numpy())
    high = np.nanmax((means + stds.fillna(0)).to_numpy())
    for ax, panel in zip(axes, panels):
        for system, values in means.iterrows():
            if system not in panel:
                ax.plot(ks, values.to_numpy(), color="#c8c8c8", linewidth=0.8, zorder=1)
        for offset, (i, system) in zip(dodge_offsets(len(panel)), enumerate(panel)):
            style = featuresets.index(parts.loc[system, "featureset"])
            ax.errorbar(ks + offset, means.loc[system].to_numpy(), yerr=stds.loc[system].to_numpy(),
                        color=colors(i), marker=MARKERS[i % len(MARKERS)],
                        linestyle=LINE_STYLES[style % len(LINE_STYLES)],
                        fillstyle=FILL_STYLES[style % len(FILL_STYLES)], markersize=4, linewidth=1.3,
                        elinewidth=0.8, capsize=2.0, capthick=0.8, label=str(system), zorder=3)
        ax.set_title(", ".join(dict.fromkeys(family[s] for s in panel)), fontsize=9)
        ax.set_xticks(ks)
        ax.set_ylim(low - 0.01, high + 0.01)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    for ax in axes[::n_cols]:
        ax.set_ylabel(f"mean {AT_K_LABELS.get(metric, metric + '@k')} (test)", fontsize=9)
    fig.supxlabel(f"k; {INTERVAL_TEXT}; grey: the other systems", fontsize=9)
    if title:
        fig.suptitle(title)
    return fig


def ndcg_at_k_plot(per_query: pd.DataFrame, out_png: Path, title: str = "", k_max: int = 10,
                   metric: str = "ndcg", palette: list[str] | None = None,
                   families: dict[str, str] | None = None) -> Path:
    """:func:`ndcg_at_k_figure` written to ``out_png``."""
    return save_figure(ndcg_at_k_figure(per_query, title, k_max, metric, palette, families), out_png)


TOP_GROUP_COLOUR = "#a8d5ba"  # every system of a data set's top group: one shade
BELOW_CMAP = "YlOrRd"  # outside it: light just below the group, dark far below


MDD_SPAN = 3.0  # with the data sets' MDDs, the colour scale's dark end: this many MDDs below the group


def below_top_group(means: pd.DataFrame, top: pd.DataFrame, mdd: dict[str, float] | None = None) -> np.ndarray:
    """Per cell, how far the system is below its data set's top group, 0 in the group: the gap to
    the group's lowest mean in units of :data:`MDD_SPAN` times the data set's minimum detectable
    difference (``mdd``, capped at 1), or, without an MDD for every data set, over the largest gap
    of the data set (1 for the lowest system); NaN where a system did not run. Data sets differ in
    scale, hence per data set; in MDDs a system just below the group stays light."""
    values = means.to_numpy(dtype=float)
    inside = top.to_numpy(dtype=bool) & np.isfinite(values)
    group_low = np.nanmin(np.where(inside, values, np.nan), axis=0)  # NaN for a data set without a group
    gap = np.where(inside, 0.0, np.clip(group_low - values, 0.0, None))
    scale = np.array([(mdd or {}).get(c, np.nan) for c in means.columns], dtype=float) * MDD_SPAN
    if not (np.isfinite(scale) & (scale > 0)).all():
        scale = np.max(np.nan_to_num(gap), axis=0)  # the widest gap; 0 where every system is in the group
    with np.errstate(invalid="ignore"):
        relative = np.where(inside, 0.0, np.minimum(gap / np.where(scale > 0, scale, 1.0), 1.0))
    return np.where(np.isfinite(values), relative, np.nan)


def leaderboard_figure(means: pd.DataFrame, ranks: pd.DataFrame, top: pd.DataFrame, metric: str,
                       title: str = "", notes: dict[str, str] | None = None,
                       mdd: dict[str, float] | None = None) -> Figure:
    """Heat map of systems (rows, in the given order) x data sets (columns) of ``metric``: each
    cell shows the mean and the rank, bold in the top group. Its colour says where the system
    stands against the top group, not against the data set's range (26 systems alike would
    spread from dark to bright): one shade for every system in the group, the others from light
    to dark by their distance below it (:func:`below_top_group`); grey where a system did not run.
    ``means``, ``ranks`` and ``top`` share index and columns; ``notes``: a line under a data
    set's name (e.g. its top group's size and minimum detectable difference); ``mdd``: each data
    set's minimum detectable difference, the unit of the distance below the group."""
    values = means.to_numpy(dtype=float)
    relative = below_top_group(means, top, mdd)
    in_mdd = mdd is not None and all(np.isfinite(mdd.get(c, np.nan)) and mdd.get(c, 0) > 0 for c in means.columns)
    inside = top.to_numpy(dtype=bool) & np.isfinite(values)
    n_rows, n_cols = values.shape
    below = colormaps[BELOW_CMAP]
    # outside the group from 0.25 of the map on, so the nearest is still told from the group's shade
    colours = below(0.25 + 0.75 * np.nan_to_num(relative))
    colours[inside] = to_rgba(TOP_GROUP_COLOUR)
    colours[~np.isfinite(values)] = to_rgba("#d9d9d9")
    fig = Figure(figsize=(2.4 + 1.6 * n_cols, 1.4 + 0.32 * n_rows))
    ax = fig.add_subplot()
    ax.imshow(colours, aspect="auto")
    for i in range(n_rows):
        for j in range(n_cols):
            if np.isnan(values[i, j]):
                ax.text(j, i, "–", ha="center", va="center", fontsize=7)
                continue
            rank = float(ranks.iat[i, j])
            text = f"{values[i, j]:.3f} ({rank:g})" if rank.is_integer() else f"{values[i, j]:.3f} ({rank:.1f})"
            dark = not inside[i, j] and relative[i, j] > 0.55
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black",
                    fontweight="bold" if inside[i, j] else "normal")
    notes = notes or {}
    ax.set_xticks(range(n_cols), [f"{c}\n{notes[c]}" if notes.get(c) else str(c) for c in means.columns], fontsize=8)
    ax.set_yticks(range(n_rows), [str(r) for r in means.index], fontsize=8)
    ax.xaxis.tick_top()
    scale = ScalarMappable(norm=Normalize(0.0, 1.0), cmap=ListedColormap(below(np.linspace(0.25, 1.0, 256))))
    bar = fig.colorbar(scale, ax=ax, fraction=0.04, pad=0.02)
    bar.set_label(f"below the top group's lowest {metric}: in the data set's MDDs (0 to {MDD_SPAN:g} or more)"
                  if in_mdd else f"below the top group: from its lowest {metric} (0) to the data set's lowest system (1)",
                  fontsize=7)
    if in_mdd:
        bar.set_ticks(np.linspace(0, 1, int(MDD_SPAN) + 1), labels=[f"{v:g}" for v in range(int(MDD_SPAN) + 1)])
    ax.legend(handles=[Patch(facecolor=TOP_GROUP_COLOUR, label="in the top group (bold)")], fontsize=7,
              loc="upper center", bbox_to_anchor=(0.5, -0.01), frameon=False)
    if title:
        ax.set_title(title, fontsize=9, pad=18)
    return fig


def leaderboard_plot(means: pd.DataFrame, ranks: pd.DataFrame, top: pd.DataFrame, metric: str, out_png: Path,
                     title: str = "", notes: dict[str, str] | None = None,
                     mdd: dict[str, float] | None = None) -> Path:
    """:func:`leaderboard_figure` written to ``out_png``."""
    return save_figure(leaderboard_figure(means, ranks, top, metric, title, notes, mdd), out_png)
