"""Protocol forensics: how each open choice of a paper's protocol moves every published cell.

Input is one long frame, one row per (cell, variant): the cell (paper, study, row, column,
system, metric, published) and our number for it when the study was rerun under the variant
(``ours``, its interval, the verdict against the paper; :func:`variant_row`). The variant
``as-study`` is the study as configured. From it:

* :func:`moves`: per cell, how far each variant moves our number from the as-study one;
* :func:`explain`: per cell, the variant whose number is closest to the paper (preferring one whose
  interval holds the paper's number), when one comes closer than the study as configured;
* :func:`figure`: every cell's gap to the paper under each variant.

The intervals are the scorecard's (rankstudy.reporting.scorecard: a bootstrap over test queries
within folds), so a move smaller than the interval's half-width is noise of the test set.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure

from rankstudy.reporting import scorecard as sc

AS_STUDY = "as-study"
CELL_KEYS = ["paper", "study", "row", "column", "system", "metric"]
COLUMNS = [*CELL_KEYS, "published", "variant", "choice", "label", "ours", "ci_low", "ci_high", "verdict", "learned",
           "n_queries"]


def variant_row(cell: sc.Cell, variant: str, choice: str, label: str, values: dict[int, np.ndarray],
                learned: bool, n_resamples: int, seed: int, confidence: float) -> dict:
    """Our number for a published cell under one variant: ``values`` are the cell's metric per
    test query by fold, as the variant's run evaluated it (its relevance threshold and labels);
    the mean and interval are the scorecard's."""
    values = {f: v[np.isfinite(v)] for f, v in values.items()}  # queries the metric is undefined on
    s = sc.summarise(values, n_resamples, seed, confidence)
    return {**{k: getattr(cell, k) for k in CELL_KEYS}, "published": cell.published, "variant": variant,
            "choice": choice, "label": label, "ours": s["ours"], "ci_low": s["ci_low"], "ci_high": s["ci_high"],
            "verdict": sc.verdict(cell.published, s["ci_low"], s["ci_high"]), "learned": learned,
            "n_queries": s["n_queries"]}


def _as_study(frame: pd.DataFrame) -> pd.DataFrame:
    base = frame[frame["variant"] == AS_STUDY].set_index(CELL_KEYS)
    if base.empty:
        raise ValueError(f"forensics: no {AS_STUDY!r} rows (the studies as configured) to measure moves from")
    return base


def moves(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells x variants: our number under the variant minus the as-study number (NaN where the
    variant has no number for the cell)."""
    base = _as_study(frame)["ours"]
    wide = frame.pivot_table(index=CELL_KEYS, columns="variant", values="ours", sort=False)
    return wide.sub(base.reindex(wide.index), axis=0).drop(columns=AS_STUDY)


def explain(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: the paper's number, ours as configured and its verdict, the variant
    closest to the paper (or ``none closer``) with its number, move and verdict, and the largest
    move of each choice (signed, the variant that makes it)."""
    base = _as_study(frame)
    others = frame[frame["variant"] != AS_STUDY].copy()
    others["gap"] = (others["ours"] - others["published"]).abs()
    others["base_gap"] = (base["ours"] - base["published"]).abs().reindex(
        pd.MultiIndex.from_frame(others[CELL_KEYS])).to_numpy()
    others["move"] = others["ours"] - base["ours"].reindex(pd.MultiIndex.from_frame(others[CELL_KEYS])).to_numpy()
    rows = []
    for key, part in others.groupby(CELL_KEYS, sort=False):  # one row per published cell (tens)
        b = base.loc[key]
        closer = part[part["gap"] < part["base_gap"]]
        best = closer.assign(missed=closer["verdict"] != "reproduced").sort_values(["missed", "gap"])
        row = {**dict(zip(CELL_KEYS, key)), "published": b["published"], "as_study": b["ours"],
               "as_study_verdict": b["verdict"], "as_study_queries": b["n_queries"]}
        if len(best):
            top = best.iloc[0]
            row.update(closest=top["variant"], closest_label=top["label"], closest_value=top["ours"],
                       closest_move=top["move"], closest_verdict=top["verdict"], closest_queries=top["n_queries"])
        else:
            row.update(closest="none closer", closest_label="", closest_value=np.nan, closest_move=np.nan,
                       closest_verdict="", closest_queries=0)
        largest = part.loc[part.groupby("choice", sort=False)["move"].apply(lambda m: m.abs().idxmax())]
        row["moves"] = "; ".join(f"{r.choice}: {r.move:+.3f} ({r.variant})" for r in largest.itertuples())
        rows.append(row)
    order = list(dict.fromkeys(map(tuple, base.reset_index()[CELL_KEYS].to_numpy())))
    out = pd.DataFrame(rows).set_index(CELL_KEYS).reindex(order).reset_index()
    return out


def summary_line(explained: pd.DataFrame) -> str:
    n = len(explained)
    reproduced = int((explained["as_study_verdict"] == "reproduced").sum())
    more = int(((explained["as_study_verdict"] != "reproduced") & (explained["closest_verdict"] == "reproduced")).sum())
    closer = int((explained["closest"] != "none closer").sum())
    return (f"{n} published cells rerun under the protocol variants: {reproduced} reproduced as the studies are "
            f"configured, {more} more under one variant; a variant brings {closer} of {n} closer to the paper.")


def display(explained: pd.DataFrame) -> pd.DataFrame:
    f = sc._fmt
    return pd.DataFrame({
        "paper": explained["paper"], "cell": explained["row"] + " / " + explained["column"],
        "published": [f(v) for v in explained["published"]],
        "ours as configured": [f"{f(v)} ({verdict}; {n} queries)" for v, verdict, n in zip(
            explained["as_study"], explained["as_study_verdict"], explained["as_study_queries"])],
        # the test queries too: a variant that cleans most queries away wins on a wide interval
        "closest variant": [c if c == "none closer" else f"{c}: {f(v)} ({f(m, signed=True)}, {verdict}; {n} queries)"
                            for c, v, m, verdict, n in zip(explained["closest"], explained["closest_value"],
                                                           explained["closest_move"], explained["closest_verdict"],
                                                           explained["closest_queries"])],
        "largest move of each choice": explained["moves"],
    })


def variants_legend(frame: pd.DataFrame) -> pd.DataFrame:
    legend = frame[["variant", "choice", "label"]].drop_duplicates("variant")
    return legend[legend["variant"] != AS_STUDY].reset_index(drop=True)


NOTE = ("Each variant reruns the study's methods (training, selection and evaluation) with one open choice of the "
        "protocol changed (a joint variant changes several). Move: our number under the variant minus ours as "
        "configured. Closest variant: the one whose number is nearest the paper's, preferring one whose interval "
        "holds it, among those nearer than the study as configured; its verdict uses the scorecard's interval "
        f"({sc.INTERVAL}). A move within the interval's half-width is test-set noise; a variant that leaves "
        "far fewer test queries (see the counts) has a wide interval and a different test set, so its "
        "verdict says less.")


def to_markdown(frame: pd.DataFrame, title: str) -> str:
    explained = explain(frame)
    return (f"# {title}\n\n**{summary_line(explained)}**\n\n{display(explained).to_markdown(index=False)}\n\n"
            f"{NOTE}\n\n## Variants\n\n{variants_legend(frame).to_markdown(index=False)}\n")


def to_html(frame: pd.DataFrame, title: str, png_name: str | None = None) -> str:
    explained = explain(frame)
    style = ("<style>table{border-collapse:collapse;font-family:sans-serif;font-size:13px}"
             "td,th{padding:2px 8px;border-bottom:1px solid #ddd;vertical-align:top;text-align:left}</style>")
    figure_html = f'<p><img src="{html.escape(png_name)}" style="max-width:100%"></p>\n' if png_name else ""
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>{style}</head>"
            f"<body>\n<h2>{html.escape(title)}</h2>\n<p><b>{html.escape(summary_line(explained))}</b></p>\n"
            f"{display(explained).to_html(index=False)}\n<p>{html.escape(NOTE)}</p>\n{figure_html}"
            f"<h3>Variants</h3>\n{variants_legend(frame).to_html(index=False)}\n</body></html>\n")


def figure(frame: pd.DataFrame, title: str = "") -> Figure:
    """One row per published cell: ours minus the paper under each variant (a dot coloured by the
    choice it changes), the study as configured as a black diamond with its interval; 0 is the
    paper's number."""
    cells = list(dict.fromkeys(map(tuple, frame[CELL_KEYS].to_numpy())))
    y_of = {c: i for i, c in enumerate(cells)}
    choices = list(dict.fromkeys(frame.loc[frame["variant"] != AS_STUDY, "choice"]))
    cmap = colormaps["tab10"]
    fig = Figure(figsize=(9.0, 0.28 * len(cells) + 1.6))
    ax = fig.add_subplot()
    y = np.array([y_of[tuple(r)] for r in frame[CELL_KEYS].to_numpy()], dtype=float)
    gap = (frame["ours"] - frame["published"]).to_numpy()
    for i, choice in enumerate(choices):
        mask = ((frame["choice"] == choice) & (frame["variant"] != AS_STUDY)).to_numpy()
        ax.scatter(gap[mask], y[mask] + (i - len(choices) / 2) * 0.06, s=14, color=cmap(i % 10), alpha=0.85,
                   label=choice, zorder=3)
    base = (frame["variant"] == AS_STUDY).to_numpy()
    low = (frame["ci_low"] - frame["published"]).to_numpy()[base]
    high = (frame["ci_high"] - frame["published"]).to_numpy()[base]
    ax.errorbar(gap[base], y[base], xerr=np.vstack([gap[base] - low, high - gap[base]]), fmt="D", color="black",
                markersize=4, capsize=2, lw=0.8, label="as configured (95% interval)", zorder=4)
    ax.axvline(0.0, color="grey", lw=1, ls="--")
    ax.set_yticks(range(len(cells)))
    ax.set_yticklabels([f"{c[0]}: {c[2]} / {c[3]}" for c in cells], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ours - published (0: the paper's number)")
    ax.grid(True, axis="x", alpha=0.3)
    if title:
        ax.set_title(title)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    return fig
