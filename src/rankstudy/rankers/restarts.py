"""Several optimiser starts for a non-convex objective: each restart's solution is scored on
the validation split (or by its training loss without one), the best is kept, and every
restart's training curve goes into the history (keys prefixed ``restart<r>_``, plus its
``restart<r>_selection_value`` at its last step), so all of them reach the fold's MLflow run."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rankstudy.evaluation.metrics import per_query
from rankstudy.solvers.base import Solution


def best_of_restarts(objective, vali_obj, vali, n_restarts: int, start: Callable[[int], np.ndarray],
                     solver: Callable[[int], object], metric: str, rel_threshold: float,
                     label: str = "") -> tuple[Solution, int, list[dict]]:
    """Returns (best solution, its restart index, merged history)."""
    best, history = None, []
    for restart in range(int(n_restarts)):
        print(f"restart {restart + 1}/{n_restarts}{label}", flush=True)
        solution = solver(restart).solve(objective, start(restart), vali_obj)
        if vali is not None:
            scores = vali_obj.scores(solution.theta)
            value = float(per_query(scores, vali.y, vali.offsets, [metric],
                                    rel_threshold=rel_threshold)[metric].mean())
        else:
            value = -solution.history[-1]["train_loss"]
        steps = {row["step"]: row for row in history}
        for entry in solution.history:
            row = steps.get(entry["step"])
            if row is None:
                row = steps[entry["step"]] = {"step": entry["step"]}
                history.append(row)
            row.update({f"restart{restart}_{k}": v for k, v in entry.items() if k != "step"})
        steps[solution.history[-1]["step"]][f"restart{restart}_selection_value"] = value
        print(f"restart {restart + 1}: {'validation ' + metric if vali is not None else '-train loss'} "
              f"{value:.5f}", flush=True)
        if best is None or value > best[0]:
            best = (value, restart, solution)
    history.sort(key=lambda row: row["step"])
    return best[2], best[1], history
