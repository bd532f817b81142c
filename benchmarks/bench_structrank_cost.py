"""What one StructRank fit (the leaderboard's: full CDN, Nadaraya-Watson, 10 epochs, 3 restarts)
costs on a large fold, from its parts, measured on the synthetic folds of ``bench_board_cost.py``
(MSLR-WEB30K's shape at 1/k) on one thread, and grown to the full fold.

A fit is per-query SGD steps plus evaluations of whole splits, and each has two parts:

* the Nadaraya-Watson scorer: every scored document against every training document, so
  seconds = alpha x rows x N (N training documents; two matrix products with the features and a
  softmax per pair). A step's forward and vjp (alpha_step) and a whole split's scores (alpha_scores)
  are timed on a sample of queries and on 2,000 validation rows;
* the full CDN's loss: E (E - 1) cliques for a query of E edges, seconds = gamma + beta x E^2,
  fitted by least squares on a sample of queries (those up to ``--max-cliques`` cliques timed).

    epoch     = alpha_step N^2 + sum_train(gamma + beta E^2)
    train_ev  = alpha_scores N^2 + sum_train(gamma + beta E^2)        (step 0; the final objective)
    vali_ev   = alpha_scores N_vali N + sum_vali(gamma + beta E^2)     (step 0 and every epoch)
    fit       = restarts (epochs epoch + train_ev + (epochs + 1) vali_ev + alpha_scores N_vali N) + train_ev

Growing to the full fold (``--full-docs``, MSLR-WEB30K's 2.27M): the CDN sums and N_vali in
proportion to N (queries of the same shape), the scorer's terms with N^2; alpha is measured a
second time with the chunks of weights the full fold would take (KERNEL_BLOCK_ELEMENTS // N_full
rows, weights kept for the vjp only up to KEPT_ELEMENTS). Then the training documents at which a
fit reaches ``--target-hours`` of CPU. ``--validate K`` also fits StructRank for real at 1/K (in
this process, with ``--validate-epochs`` and ``--validate-restarts``) and prints measured against
predicted CPU seconds. Peak RSS growth over the timed steps is read from /proc (VmHWM, reset first).

    python benchmarks/bench_structrank_cost.py [--sizes 16 8] [--workdir /tmp/board-cost] [--sample 16]
        [--max-cliques 2e9] [--validate 64] [--validate-epochs 2] [--validate-restarts 1] [--target-hours 2]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from bench_board_cost import FULL_DOCS, data_dir, prepare

EPOCHS, RESTARTS = 10, 3  # StructRank's defaults, as the leaderboard runs it


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def load(workdir: Path, shape: str, k: int):
    from rankstudy.data.rankdata import RankData

    prepare(workdir, shape, k)
    folder = data_dir(workdir, shape, k)
    train, vali = (RankData.from_npz(folder / f"{s}.npz") for s in ("train", "vali"))
    return train.with_features(np.array(train.X)), vali.with_features(np.array(vali.X))


def edges(data) -> np.ndarray:
    from rankstudy.losses.cdn import order_edges

    return np.array([len(order_edges(data.y[a:b])[0]) for a, b in zip(data.offsets[:-1], data.offsets[1:])])


def sample_queries(lengths: np.ndarray, count: int) -> np.ndarray:
    """Queries at evenly spaced quantiles of the length, the longest included."""
    order = np.argsort(lengths, kind="stable")
    return np.unique(order[np.linspace(0, len(order) - 1, count).round().astype(int)])


def measure(train, vali, args, full_docs: float | None) -> dict:
    """alpha_step, alpha_scores, gamma, beta on this fold; with ``full_docs``, alpha with the chunks
    a fold of that many training documents would take."""
    from rankstudy.losses.cdn import CDNLoss
    from rankstudy.scorers import kernel
    from rankstudy.scorers.kernel import NadarayaWatsonScorer
    from rankstudy.solvers.objective import Objective

    N = len(train.y)
    saved = kernel.KERNEL_BLOCK_ELEMENTS, kernel.KEPT_ELEMENTS
    if full_docs:
        kernel.KERNEL_BLOCK_ELEMENTS = max(1, saved[0] // int(full_docs)) * N
        kernel.KEPT_ELEMENTS = int(saved[1] * N // full_docs)
    try:
        rng = np.random.default_rng([0, 0])
        scorer = NadarayaWatsonScorer(train.X, train.y)
        objective = Objective(scorer.bind(train), CDNLoss("full", reduction="mean"), train, 0.0)
        theta = objective.initial(rng)  # the fit's start: bandwidths and CDN weights in [0, 1]
        a = theta[:objective.scorer.n_params]
        lengths, E = np.diff(train.offsets), edges(train)
        picked = sample_queries(lengths, args.sample)
        nw, cdn = [], []
        Path("/proc/self/clear_refs").write_text("5")
        rss0 = _status("VmRSS")
        for q in picked:
            one = objective.for_queries([q])

            def step(one=one):
                s, vjp = one.scorer.forward(a)
                vjp(np.ones(len(s)))

            nw.append((lengths[q], min(cpu(step) for _ in range(2))))
            if float(E[q]) ** 2 <= args.max_cliques and E[q] >= 2:
                padded = np.zeros(one.shape)
                padded.ravel()[one.flat] = one.scorer.scores(a)
                t = min(cpu(lambda: one.loss(padded, one.labels, one.mask, theta[-2:])) for _ in range(2))
                cdn.append((float(E[q]) ** 2, t))
        rows = min(2000, len(vali.y))
        bound_vali = scorer.bind(vali).rows(np.arange(rows))
        scores_s = min(cpu(lambda: bound_vali.scores(a)) for _ in range(2))
        growth = (_status("VmHWM") - rss0) / 2**30
    finally:
        kernel.KERNEL_BLOCK_ELEMENTS, kernel.KEPT_ELEMENTS = saved
    L = np.array([r for r, _ in nw], float)
    t = np.array([s for _, s in nw])
    alpha_step = float(t.sum() / (L.sum() * N))  # the sample's seconds per (row, reference) pair
    x, y = np.array([c for c, _ in cdn]), np.array([s for _, s in cdn])
    beta, gamma = np.linalg.lstsq(np.column_stack([x, np.ones_like(x)]), y, rcond=None)[0]
    return {"alpha_step": alpha_step, "alpha_scores": scores_s / (rows * N), "beta": max(float(beta), 0.0),
            "gamma": max(float(gamma), 0.0), "rss_growth_gb": round(growth, 3),
            "alpha_step_by_rows": [(int(r), s / (r * N)) for r, s in nw],
            "cdn_sample": [(int(c), s) for c, s in cdn], "chunk_rows": int(max(1, min(kernel.DEFAULTS["chunk_rows"], (
                kernel.KERNEL_BLOCK_ELEMENTS // int(full_docs)) if full_docs else kernel.KERNEL_BLOCK_ELEMENTS // N)))}


def fit_seconds(c: dict, N: float, N_vali: float, cliques_train: float, q_train: float, cliques_vali: float,
                q_vali: float, epochs: int = EPOCHS, restarts: int = RESTARTS) -> dict:
    """The formula of the module docstring, by part."""
    cdn_train = c["gamma"] * q_train + c["beta"] * cliques_train
    cdn_vali = c["gamma"] * q_vali + c["beta"] * cliques_vali
    scorer = restarts * (epochs * c["alpha_step"] * N * N + c["alpha_scores"] * N * N
                         + (epochs + 2) * c["alpha_scores"] * N_vali * N) + c["alpha_scores"] * N * N
    loss = restarts * (epochs * cdn_train + cdn_train + (epochs + 1) * cdn_vali) + cdn_train
    return {"scorer": scorer, "cdn": loss, "total": scorer + loss}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="mslr30k")
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 8])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/board-cost"))
    parser.add_argument("--sample", type=int, default=16)
    parser.add_argument("--max-cliques", type=float, default=2e9)
    parser.add_argument("--full-docs", type=float)
    parser.add_argument("--target-hours", type=float, default=2.0)
    parser.add_argument("--validate", type=int, metavar="K")
    parser.add_argument("--validate-epochs", type=int, default=2)
    parser.add_argument("--validate-restarts", type=int, default=1)
    args = parser.parse_args()
    from rankstudy.util.threads import use_job_threads

    use_job_threads(1)
    full = args.full_docs or FULL_DOCS[args.shape]
    runs = []
    if args.validate:
        from rankstudy.rankers.structrank import StructRank

        train, vali = load(args.workdir, args.shape, args.validate)
        c = measure(train, vali, args, None)
        Ev = edges(vali).astype(float)
        Et = edges(train).astype(float)
        want = fit_seconds(c, len(train.y), len(vali.y), (Et ** 2).sum(), train.n_queries, (Ev ** 2).sum(),
                           vali.n_queries, args.validate_epochs, args.validate_restarts)
        model = StructRank(epochs=args.validate_epochs, restarts=args.validate_restarts)
        got = cpu(lambda: model.fit(train, vali))
        print(f"validate 1/{args.validate} ({len(train.y):,} training documents, {args.validate_epochs} epochs, "
              f"{args.validate_restarts} restart(s)): fit {got:.0f} CPU-s, predicted {want['total']:.0f} "
              f"(scorer {want['scorer']:.0f}, CDN {want['cdn']:.0f}): {got / want['total']:.2f}x", flush=True)
        runs.append({"validate": args.validate, "measured_cpu_s": got, "predicted": want})
    for k in args.sizes:
        train, vali = load(args.workdir, args.shape, k)
        N, Nv = len(train.y), len(vali.y)
        Et, Ev = edges(train).astype(float), edges(vali).astype(float)
        sums = dict(cliques_train=float((Et ** 2).sum()), q_train=train.n_queries, cliques_vali=float((Ev ** 2).sum()),
                    q_vali=vali.n_queries)
        here, there = measure(train, vali, args, None), measure(train, vali, args, full)
        at_k = fit_seconds(here, N, Nv, **sums)
        grow = full / N

        def at(n: float, c=there) -> dict:
            g = n / N
            return fit_seconds(c, n, Nv * g, sums["cliques_train"] * g, sums["q_train"] * g,
                               sums["cliques_vali"] * g, sums["q_vali"] * g)

        at_full = at(full)
        lo, hi = 1.0, full  # the training documents where a fit reaches the target
        for _ in range(60):
            mid = (lo * hi) ** 0.5
            lo, hi = (mid, hi) if at(mid)["total"] <= args.target_hours * 3600 else (lo, mid)
        print(f"1/{k}: {N:,} training documents ({train.n_queries:,} queries, {Et.sum():,.0f} edges, "
              f"{sums['cliques_train']:.3g} cliques), vali {Nv:,}; peak RSS growth over the timed steps "
              f"{here['rss_growth_gb']:.2f} GiB ({there['rss_growth_gb']:.2f} with the full fold's chunks)")
        for name, c in (("here", here), ("full-size chunks", there)):
            print(f"  {name}: alpha_step {c['alpha_step'] * 1e9:.2f} ns and alpha_scores "
                  f"{c['alpha_scores'] * 1e9:.2f} ns per (row, training document), chunks of {c['chunk_rows']} rows; "
                  f"CDN beta {c['beta'] * 1e9:.3f} ns per clique, gamma {c['gamma'] * 1e3:.2f} ms per query "
                  f"({len(c['cdn_sample'])} queries timed)")
        print(f"  predicted fit at 1/{k}: {at_k['total']:,.0f} CPU-s (scorer {at_k['scorer']:,.0f}, CDN "
              f"{at_k['cdn']:,.0f}); at {full:,.0f} documents ({grow:.1f}x): {at_full['total'] / 3600:,.0f} CPU-h "
              f"(scorer {at_full['scorer'] / 3600:,.0f}, CDN {at_full['cdn'] / 3600:,.0f}); "
              f"{args.target_hours:g} CPU-h reached at {lo:,.0f} training documents ({lo / full:.3f} of the fold)",
              flush=True)
        runs.append({"k": k, "train_docs": N, "vali_docs": Nv, **sums, "here": here, "full_chunks": there,
                     "predicted_here": at_k, "predicted_full": at_full, "target_docs": lo})
    out = args.workdir / "structrank-cost.json"
    out.write_text(json.dumps(runs, indent=1))
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
