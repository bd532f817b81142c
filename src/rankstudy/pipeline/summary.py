"""What a finished run prints last: where its tables, plots and runs are, how to see them, how
many jobs ran and which rules took the time (from the benchmark files this run wrote), and the
systems its tables mark: ⚠ (the chosen model did not learn in some fold) and ≡ (its test scores
all tied in most queries of some fold), read from each data set's table CSV."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from rankstudy.pipeline import layout
from rankstudy.pipeline.code_versions import other_code_lines
from rankstudy.reporting.marks import NOT_LEARNED_MARK, TIED_MARK


def jobs_since(started: float, results: Path = Path(layout.RESULTS)) -> pd.DataFrame:
    """Rule and wall seconds of every job whose benchmark file was written since ``started``."""
    rows = []
    for path in (results / "benchmarks").rglob("*.tsv"):
        if path.stat().st_mtime >= started:
            try:
                seconds = float(pd.read_csv(path, sep="\t")["s"].iloc[-1])
            except (OSError, ValueError, KeyError, IndexError, pd.errors.ParserError):
                continue
            rows.append({"rule": path.relative_to(results / "benchmarks").parts[0], "seconds": seconds})
    return pd.DataFrame(rows, columns=["rule", "seconds"])


def _flag(values: pd.Series) -> pd.Series:
    """Booleans as the table CSV holds them (True/False, or their strings in a mixed column)."""
    return values.map(lambda v: str(v).strip().lower() == "true")


def flagged_systems(study: str, datasets: list[str]) -> list[str]:
    """One line per data set whose table marks a system ⚠ or ≡ (the table's legend says which
    fold and why); none where its CSV is missing (a run that stopped before the tables)."""
    lines = []
    for dataset in datasets:
        path = Path(layout.fill(layout.TABLES, study=study, dataset=dataset) + ".csv")
        try:
            table = pd.read_csv(path)
        except (OSError, ValueError, pd.errors.ParserError):
            continue
        marks = [(NOT_LEARNED_MARK, "did not learn", ~_flag(table["learned"]) if "learned" in table else None),
                 (TIED_MARK, "test scores tied", _flag(table["tied_scores"]) if "tied_scores" in table else None)]
        for mark, what, flagged in marks:
            if flagged is not None and flagged.any():
                systems = ", ".join(dict.fromkeys(table.loc[flagged, "system"].astype(str)))
                lines.append(f"  {mark} {what} on {dataset}: {systems} (the legend of {path.with_suffix('.md')} "
                             f"says which fold and why)")
    return lines


def run_summary(study: str, datasets: list[str], started: float, scorecard: bool = False,
                tracking_uri: str | None = None, leaderboard: bool = False, fits: list[str] | None = None) -> str:
    """``scorecard``: a scorecard run, whose own outputs are the scorecard (its member studies
    printed their summaries as they ended); ``leaderboard``: the study writes one (report.leaderboard);
    ``fits``: the fit.json of every fold the run's results are made of, to say which other code
    made (rankstudy.pipeline.code_versions)."""
    jobs = jobs_since(started)
    lines = [f"rankstudy: {'scorecard' if scorecard else 'study'} {study!r} done in {time.time() - started:.0f} s; "
             f"{len(jobs)} job(s) ran"]
    if scorecard:
        lines.append(f"  scorecard: {layout.SCORECARD}.md (also .csv .html, .conventions.csv)")
        lines.append("  report:    snakemake --report report.html (add the --configfile/--config of this run)")
        return "\n".join(lines)
    said = other_code_lines(fits or [], study)
    lines.extend(f"  {'code:' if i == 0 else '':<8} {line}" for i, line in enumerate(said))
    if len(jobs):
        by_rule = jobs.groupby("rule")["seconds"].agg(["count", "sum"]).sort_values("sum", ascending=False)
        lines.append("  slowest rules (job seconds): " + ", ".join(
            f"{rule} {row['sum']:.0f} s ({int(row['count'])} jobs)" for rule, row in by_rule.head(3).iterrows()))
    for dataset in datasets:
        tables = layout.fill(layout.TABLES, study=study, dataset=dataset)
        lines.append(f"  tables:  {tables}.md (also .csv .html .tex, .params.md, .timing.md)")
        lines.append(f"  plots:   {layout.fill(layout.PLOTS, study=study, dataset=dataset)}.ndcg_at_k.png")
        lines.append(f"  runs:    {layout.RESULTS}/runs/{study}/{dataset}/")
    lines += flagged_systems(study, datasets)
    if leaderboard:
        lines.append(f"  leaderboard: {layout.fill(layout.LEADERBOARD, study=study)}.md (also .csv .html), "
                     f"{layout.fill(layout.LEADERBOARD_PLOT, study=study)}")
    lines.append(f"  report:  snakemake --report report.html (add the --configfile/--config of this run)")
    if tracking_uri and tracking_uri.startswith("http"):
        lines.append(f"  MLflow:  {tracking_uri}")
    else:
        lines.append("  MLflow:  python3 workflow/bootstrap.py ui")
    return "\n".join(lines)
