"""Figures of the comparison: mean NDCG@k curves and a per-metric bar chart.

Figures are drawn on an explicit Agg canvas (no pyplot), so no global backend
or figure state is touched and the functions are safe in headless workers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rankstudy.atomic import atomic_path


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


def ndcg_at_k_plot(per_query: pd.DataFrame, out_png: Path, title: str = "", k_max: int = 10) -> Path:
    """One line per system of mean NDCG@k for k = 1..k_max (cf. Huang & Frey 2008, Fig. 4)."""
    columns = [f"ndcg@{k}" for k in range(1, k_max + 1)]
    missing = [c for c in columns if c not in per_query.columns]
    if missing:
        raise ValueError(f"ndcg_at_k_plot needs columns {missing}, absent from the per-query frame")
    curves = mean_over_folds(per_query, columns)
    ks = np.arange(1, k_max + 1)
    fig = Figure(figsize=(6.0, 4.0))
    ax = fig.add_subplot()
    for system, values in curves.iterrows():
        ax.plot(ks, values.to_numpy(), marker="o", markersize=3, label=str(system))
    ax.set_xlabel("k")
    ax.set_ylabel("mean NDCG@k (test)")
    ax.set_xticks(ks)
    ax.grid(True, alpha=0.3)
    if title:
        ax.set_title(title)
    ax.legend(fontsize="small", loc="best")
    return save_figure(fig, out_png)


def metric_bar_plot(table: pd.DataFrame, metric: str, out_png: Path, title: str = "") -> Path:
    """Bars of the mean ± std over folds of one metric from a comparison table; best bar darker.

    Significant systems (after Holm) get ``*`` (t-test) / ``†`` (randomization) above the bar.
    """
    part = table[metric]
    systems = [str(s) for s in table.index]
    x = np.arange(len(systems))
    colors = np.where(part["best"].astype(bool), "tab:blue", "lightsteelblue")
    fig = Figure(figsize=(max(4.0, 0.8 * len(systems) + 1.5), 4.0))
    ax = fig.add_subplot()
    ax.bar(x, part["mean"], yerr=part["std"].fillna(0.0), color=colors, capsize=3)
    marks = [
        ("*" if t else "") + ("†" if r else "")
        for t, r in zip(part["sig_ttest"].astype(bool), part["sig_rand"].astype(bool))
    ]
    tops = (part["mean"] + part["std"].fillna(0.0)).to_numpy()
    for xi, top, mark in zip(x, tops, marks):
        if mark:
            ax.annotate(mark, (xi, top), ha="center", va="bottom")
    ax.set_xticks(x, systems, rotation=30, ha="right")
    ax.set_ylabel(f"{metric} (test, mean ± std over folds)")
    if title:
        ax.set_title(title)
    return save_figure(fig, out_png)
