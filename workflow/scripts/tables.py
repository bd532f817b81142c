"""Comparison tables (methods x metrics, mean +- std over folds, significance against the
baseline over queries) and the NDCG@k plot of one study and data set. No MLflow here: the
log_runs job logs the runs and these files."""

from pathlib import Path

import pandas as pd

from rankstudy.reporting import budget, chosen, comparison, pages, plots, tables, timing
from rankstudy.pipeline import results
from rankstudy.pipeline.records import FoldMeta
from rankstudy.pipeline.jobs import job_logging

NO_RELEVANT = {"zero": "count as 0 (LETOR evaluation tool)", "one": "count as 1 (LightGBM convention)",
               "drop": "are left out"}



def near_duplicates_text(options: dict) -> str:
    """How the Chakrabarti cleaning read its open choices (cleaning.near_duplicates)."""
    zero = "all-zero feature vectors and " if options.get("zero_vectors", True) else ""
    side = "both documents of" if options.get("side", "both") == "both" else "the non-relevant document of"
    scope = {"query": "within a query", "split": "across each split's queries",
             "fold": "across the fold's three splits (before the split)"}[options.get("scope", "query")]
    return f"{zero}{side} each good/bad pair {scope} with cosine similarity > {options.get('cosine', 0.99):g}"


def cleaning_text(cleaning: dict) -> str:
    """What the data went through before training, in the caption's words."""
    parts = []
    if cleaning.get("drop_no_relevant"):
        parts.append(f"queries without a relevant document dropped from {', '.join(cleaning['drop_no_relevant'])}")
    if cleaning.get("chakrabarti"):
        parts.append(f"{near_duplicates_text(cleaning.get('near_duplicates') or {})} dropped from "
                     f"{', '.join(cleaning['chakrabarti'])} (Chakrabarti et al. 2008, Section 4.1)")
    if cleaning.get("binarize"):
        parts.append(f"labels binarised (1 if label >= rel_threshold, else 0) in {', '.join(cleaning['binarize'])}")
    return f" Cleaning: {'; '.join(parts)}." if parts else " No cleaning."


def folds_text(folds: list[int]) -> str:
    """What a cell holds: the mean and std over folds, or one fold's mean (no std to give)."""
    if len(folds) == 1:
        return f"mean over the test queries of fold {folds[0]} (one fold: no std over folds)"
    return f"mean ± std over folds {folds}"


def significance_text(compare: str, baseline: str, alpha: float) -> str:
    """What the marks test, in the caption's words (the legend says the rest)."""
    if compare == "all_pairs":
        return (f"significance between every pair of systems over paired test queries (randomization test, "
                f"Holm-corrected over all pairs, alpha {alpha})")
    return (f"significance vs baseline {baseline} over paired test queries (paired t-test *, randomization "
            f"test †, Holm-corrected, alpha {alpha})")


with job_logging(snakemake, "tables"):
    w, p = snakemake.wildcards, snakemake.params
    per_query = results.test_per_query(snakemake.input.per_query, p.systems)
    # row order: methods in config order, each with its feature sets
    order = [s["system"] for s in p.systems]
    per_query["system"] = pd.Categorical(per_query["system"], categories=order, ordered=True)
    per_query = per_query.sort_values(["system", "fold", "qid"], kind="stable")
    per_query["system"] = per_query["system"].astype(str)
    report, evaluation = p.report, p.evaluation
    metric_names = report["metrics"]
    # .get: a run whose workflow was read before report.compare and report.min_queries existed
    # has neither key, nor the fold_meta input
    compare = report.get("compare", "baseline")
    tests = dict(n_resamples=report["n_resamples"], alpha=report["alpha"], seed=0,
                 min_queries=report.get("min_queries", comparison.DEFAULT_MIN_QUERIES))
    summaries = results.summaries(snakemake.input.summaries, p.systems)
    table = comparison.comparison_table(per_query, metric_names, p.baseline, **tests)
    comparison.mark_not_learned(table, results.not_learned(summaries))
    max_tied = report.get("max_tied_share", tables.MAX_TIED_SHARE)
    comparison.mark_tied_scores(table, results.tied_scores(summaries, max_tied), max_tied)
    # a random ranking's scores depend on the test queries only: any system's summary holds them
    random = next((summaries[s].random for s in order if s in summaries and summaries[s].random), {})
    table.attrs["random"] = {m: random[f"test.{m}"] for m in metric_names if f"test.{m}" in random}
    fold_metas = [FoldMeta.read(path) for path in snakemake.input.get("fold_meta", [])]
    comparison.mark_validation_queries(table, {m.fold: m.sizes["vali.n_queries"] for m in fold_metas})
    pairs = (comparison.all_pairs_comparison(per_query, metric_names, list(table.index), **tests)
             if compare == "all_pairs" else comparison.baseline_pairs(table, metric_names))
    caption = (f"{w.dataset}, study {w.study}: test split, {folds_text(p.folds)}; "
               f"{significance_text(compare, p.baseline, report['alpha'])}. "
               f"Score ties are broken by input order; queries without a relevant document "
               f"(label >= {evaluation['rel_threshold']}) {NO_RELEVANT[evaluation['no_relevant']]}."
               + cleaning_text(p.cleaning)
               # what the data set can tell apart, in the metric the leaderboard ranks by (else the first)
               + tables.power_sentence(table, (report.get("leaderboard") or {}).get("metric") or metric_names[0],
                                       pairs if compare == "all_pairs" else None))
    prefix = Path(snakemake.output.csv).with_suffix("")
    tables.write_tables(table, metric_names, prefix, caption, pairs=pairs, compare=compare)
    palette = p.get("palette")  # absent from a run whose workflow was read before it existed
    # over a dozen systems the @k plots are panels by family: each method's kind
    families = {name: (spec or {}).get("kind", name) for name, spec in snakemake.config["methods"].items()}
    plots.ndcg_at_k_plot(per_query, snakemake.output.plot, title=f"{w.dataset}: test NDCG@k", palette=palette,
                         families=families)
    plots.ndcg_at_k_plot(per_query, snakemake.output.plot_p, title=f"{w.dataset}: test P@k", metric="p",
                         families=families,
                         palette=palette)
    timing.write_timing(
        timing.timing_frame({s: summaries[s].timing for s in order if s in summaries}), prefix,
        f"{w.dataset}, study {w.study}: training time, "
        f"{'mean over folds ' + str(p.folds) if len(p.folds) > 1 else 'fold ' + str(p.folds[0])}.")
    # each tuned fold's budget and what it spent: the leaderboard says why a method ran fewer trials
    budget.write_tuning(budget.tuning_frame({s: summaries[s].tuning for s in order if s in summaries}), prefix)
    chosen.write_chosen(
        chosen.chosen_frame({s: summaries[s] for s in order if s in summaries}), prefix,
        f"{w.dataset}, study {w.study}: the hyper-parameters chosen per fold on validation "
        f"{evaluation['selection_metric']} (selection_score), what training settled itself (best_iteration: "
        f"LambdaMART's trees kept by early stopping; chosen_restart), and whether the model learned.")
    for name in snakemake.output.keys():  # report.smk: page_<name> is the report's page of output <name>
        if name.startswith("page_"):
            pages.write_table_page(snakemake.output[name.removeprefix("page_")], snakemake.output[name])
    print(Path(snakemake.output.md).read_text())
