"""The leaderboard of one study over its data sets (rankstudy.reporting.leaderboard): from each
data set's table, pairs, timing and tuning CSVs, the ranked page (.csv, .md, .html) and its heat map."""

from pathlib import Path

import pandas as pd

from rankstudy.pipeline.jobs import job_logging
from rankstudy.reporting import budget, defaults, leaderboard, plots

with job_logging(snakemake, "leaderboard"):
    w, p = snakemake.wildcards, snakemake.params
    boards, gains, tuned = {}, {}, []
    for dataset, numbers, pairs_csv, timing, tuning in zip(p.datasets, snakemake.input.numbers, snakemake.input.pairs,
                                                           snakemake.input.timing, snakemake.input.tuning):
        pairs, timing = pd.read_csv(pairs_csv, keep_default_na=False, na_values=[""]), pd.read_csv(timing)
        folds = pd.read_csv(tuning)  # each tuned fold's budget and what it spent
        tuned.append(folds)
        boards[dataset] = leaderboard.dataset_board(pd.read_csv(numbers), pairs, timing, p.metric)
        # default and tuned twins (tune.variants [default, tuned]) side by side: empty without them
        try:
            gains[dataset] = leaderboard.tuning_gains(boards[dataset], pairs, timing, p.metric,
                                                      budget.system_notes(folds))
        except ValueError as exc:  # a pairs file from an older version: name it
            raise ValueError(f"{pairs_csv}: {exc}") from None
    caption = (f"Leaderboard of study {w.study}: test {p.metric} on {', '.join(p.datasets)}, "
               f"folds {list(p.folds)}.")
    prefix = Path(snakemake.output.csv).with_suffix("")
    leaderboard.write_leaderboard(boards, p.metric, prefix, caption, alpha=p.alpha, folds=p.folds, gains=gains,
                                  budget=budget.budget_sentence(pd.concat(tuned, ignore_index=True),
                                                                {"pruner": p.pruner}),
                                  defaults=defaults.defaults_sentence(p.methods))
    means, ranks, top = leaderboard.heatmap_frames(boards)
    plots.leaderboard_plot(means, ranks, top, p.metric, snakemake.output.png,
                           title=f"{w.study}: test {p.metric} (rank); bold: top group",
                           notes=leaderboard.heatmap_notes(boards),
                           mdd={d: leaderboard.dataset_power(b).mdd for d, b in boards.items()})
    print(Path(snakemake.output.md).read_text())
