"""Score the vali and test splits of one fold with the trained model, and write the scores, a
TREC run and its qrels, the per-query metrics of both splits, the resolved configuration and a
summary with a random ranking's metrics and the "did it learn" verdict."""

import numpy as np

from rankstudy.data.kinds import load_split
from rankstudy.evaluation import metrics, runfiles
from rankstudy.evaluation.learning import learning_check, random_metrics, score_ties
from rankstudy.pipeline.jobs import job_logging
from rankstudy.pipeline.records import FitRecord, FoldMeta, FoldSummary
from rankstudy.pipeline.stepjob import exit_done, from_argv
from rankstudy.rankers.registry import load_ranker
from rankstudy.util import atomic

job = from_argv()  # run by `shell:` (rankstudy.pipeline.stepjob)
with job_logging(job, "evaluate"):
    w, evaluation, out = job.wildcards, job.params.evaluation, job.output
    meta = FoldMeta.read(job.input.meta)
    fit = FitRecord.read(job.input.fit)
    # every candidate diverged: no model, its scores taken as tied (the input order), the fold not learned
    ranker = None if fit.diverged else load_ranker(job.input.model)
    options = {"rel_threshold": evaluation["rel_threshold"], "max_label": meta.max_label,
               "no_relevant": evaluation["no_relevant"]}
    # ndcg@1..10 and p@1..10 always, for the NDCG@k and P@k plots
    names = list(dict.fromkeys([f"{m}@{k}" for m in ("ndcg", "p") for k in range(1, 11)] + evaluation["metrics"]))
    checked = list(dict.fromkeys([evaluation["selection_metric"], *evaluation["metrics"]]))
    means, random, n_queries, ties = {}, {}, {}, {}
    for split in ("vali", "test"):
        data = load_split(job.input[split])
        scores = np.zeros(len(data.y)) if ranker is None else ranker.predict(data)
        runfiles.write_scores(data, scores, out[f"scores_{split}"])
        per_query = {"qid": data.query_ids, **metrics.per_query(scores, data.y, data.offsets, names, **options)}
        atomic.write_columns(per_query, out[f"per_query_{split}"])
        means.update({f"{split}.{k}": v for k, v in metrics.mean_metrics(per_query).items()})
        random.update({f"{split}.{k}": v for k, v in random_metrics(data, checked, **options).items()})
        n_queries[split] = data.n_queries
        ties[split] = score_ties(scores, data.offsets)
        if split == "test":
            runfiles.write_trec_run(data, scores, out.trec, tag=f"{w.method}.{w.featureset}")
            runfiles.write_qrels(data, out.qrels)
    print({k: round(v, 4) for k, v in means.items() if k.startswith("test.")})
    verdict = learning_check(fit.objective, evaluation["selection_metric"], means, random)
    if fit.diverged:
        verdict = {**verdict, "learned": False, "problems": [fit.diverged, *verdict["problems"]]}
    if not verdict["learned"]:
        print(f"WARNING: {w.method} [{w.featureset}] fold {w.fold} did not learn: {'; '.join(verdict['problems'])}")
    # the first metric the evaluation computes and the random ranking was scored on
    key = next((k for k in (f"test.{m}" for m in checked) if k in means and k in random), None)
    shown = f"{key} {means[key]:.4f} (a random ranking {random[key]:.4f})" if key else "evaluated"
    print(f"summary: {shown}" + ("" if verdict["learned"] else f"; DID NOT LEARN: {'; '.join(verdict['problems'])}"))
    if ties["test"]["flagged"]:
        print(f"WARNING: {w.method} [{w.featureset}] fold {w.fold}: every test score tied in "
              f"{ties['test']['all_tied']} of {ties['test']['queries']} queries ({ties['test']['distinct_values']} "
              f"distinct scores in the split): the ranking is the input order, its metrics measure nothing")
    atomic.write_json(out.resolved, {
        "study": w.study, "dataset": w.dataset, "featureset": w.featureset, "method": w.method, "fold": int(w.fold),
        "kind": fit.kind, "params": fit.params, "grid": fit.grid, "seed": fit.seed, "selection": fit.selection,
        "evaluation": {**evaluation, **options}})
    FoldSummary(study=w.study, dataset=w.dataset, featureset=w.featureset, method=w.method, fold=int(w.fold),
                metrics=means, random=random, learned=verdict, fingerprint=meta.fingerprint,
                n_queries=n_queries, score_ties=ties).write(out.summary)
exit_done()
