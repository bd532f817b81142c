"""The sampler studies of Dubey et al. (2009), Section 5.3: test accuracy against one method
parameter swept across methods (Figure 4: sample size; Figures 5 and 6: restart skew), and
the smear of the sampled Delta around each restart state (Figure 7)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rankstudy.data.rankdata import REL_THRESHOLD
from rankstudy.evaluation.metrics import K
from rankstudy.losses.swap_sampler import SamplerSettings, deltas, draw_walks
from rankstudy.reporting.plots import MARKERS, mean_over_folds, save_figure
from rankstudy.util import atomic


def sweep_table(per_query: pd.DataFrame, methods: dict[str, dict], featuresets: list[str], parameter: str,
                metrics: list[str]) -> pd.DataFrame:
    """One row per (method, feature set) whose ``params`` set ``parameter``: its value, and per
    metric the mean and std over folds of the per-fold test means. ``series`` names the other
    parameters, so methods that differ only in ``parameter`` form one line."""
    rows = []
    fold_means = per_query.groupby(["system", "fold"])[metrics].mean()
    for name, spec in methods.items():
        params = spec.get("params", {})
        if parameter not in params:
            continue
        others = {k: v for k, v in params.items() if k != parameter}
        for featureset in featuresets:
            system = f"{name} [{featureset}]"
            if system not in fold_means.index.get_level_values(0):
                continue
            values = fold_means.loc[system]
            row = {"method": name, "featureset": featureset, "value": params[parameter],
                   "series": f"{spec['kind']} " + ", ".join(f"{k}={v}" for k, v in sorted(others.items())),
                   "folds": len(values)}
            for metric in metrics:
                row[metric] = float(values[metric].mean())
                row[f"{metric}_std"] = float(values[metric].std(ddof=1)) if len(values) > 1 else np.nan
            rows.append(row)
    if not rows:
        raise ValueError(f"report.sweep: no method run sets the parameter {parameter!r} in its params")
    return pd.DataFrame(rows).sort_values(["series", "featureset", "value"], kind="stable").reset_index(drop=True)


def sweep_figure(table: pd.DataFrame, parameter: str, metrics: list[str], label: str | None = None,
                 log_x: bool = False, title: str = "") -> Figure:
    fig = Figure(figsize=(4.2 * len(metrics), 3.4))
    for i, metric in enumerate(metrics):
        ax = fig.add_subplot(1, len(metrics), i + 1)
        for j, ((series, featureset), line) in enumerate(table.groupby(["series", "featureset"], sort=False)):
            ax.errorbar(line["value"], line[metric], yerr=line[f"{metric}_std"].fillna(0.0),
                        marker=MARKERS[j % len(MARKERS)], capsize=3, label=f"{series} [{featureset}]")
        if log_x:
            ax.set_xscale("log")
        ax.set_xlabel(label or parameter)
        ax.set_ylabel(f"test {metric}")
        ax.grid(alpha=0.3)
    fig.axes[0].legend(fontsize=7, loc="best")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def delta_smear(labels: np.ndarray, offsets: np.ndarray, settings: SamplerSettings, gain: str = "map",
                k: int = K, rel_threshold: float = REL_THRESHOLD) -> pd.DataFrame:
    """The Delta of every sampled state with the restart it came from (``best``, ``middle``,
    ``worst``: how many bads the restart put above the goods), over the queries of a split."""
    good = np.asarray(labels) >= rel_threshold
    n_good = np.add.reduceat(good, offsets[:-1]) if len(labels) else np.zeros(0, dtype=int)
    n_bad = np.diff(offsets) - n_good
    rows = np.flatnonzero((n_good > 0) & (n_bad > 0))
    walks = draw_walks(n_good[rows], n_bad[rows], rows, settings, gain, k)
    P, N = n_good[walks.query], n_bad[walks.query]
    T1 = walks.beats.shape[1]
    shift = N - walks.beats[:, 0, 0]  # every good of a restart state beats the same bads
    seed = np.where(shift == 0, "best", np.where(shift == N, "worst", "middle"))
    delta = deltas(walks.beats, P[:, None], N[:, None], gain, k)  # (W, T+1)
    return pd.DataFrame({"query": np.repeat(walks.query, T1), "restart": np.repeat(seed, T1),
                         "restart_delta": np.repeat(delta[:, 0], T1), "step": np.tile(np.arange(T1), len(seed)),
                         "delta": delta.ravel()})


def delta_smear_figure(smear: pd.DataFrame, gain: str, bins: int = 20, title: str = "") -> Figure:
    fig = Figure(figsize=(5.5, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    edges = np.linspace(0.0, 1.0, bins + 1)
    for restart in ("best", "middle", "worst"):
        values = smear.loc[smear["restart"] == restart, "delta"]
        if len(values):
            ax.hist(values, bins=edges, density=True, histtype="step", linewidth=1.5,
                    label=f"restart {restart} (mean seed Delta "
                          f"{smear.loc[smear['restart'] == restart, 'restart_delta'].mean():.2f})")
    ax.set_xlabel(f"Delta_{gain.upper()} of sampled rankings")
    ax.set_ylabel("density")
    ax.legend(fontsize=7)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


def write_sweep(table: pd.DataFrame, out_png: Path, out_csv: Path, **figure) -> list[Path]:
    return [atomic.write_csv(table, out_csv), save_figure(sweep_figure(table, **figure), out_png)]
