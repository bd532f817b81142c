"""The time left on the progress line (rankstudy.pipeline.time_left), on made-up job durations:
the mean pace of the steps done ran about 2x optimistic on a run whose long jobs (StructRank's)
were still running or not started."""

from __future__ import annotations

import heapq
import math
import random
import statistics

import pytest

from rankstudy.pipeline.time_left import Job, expected_total, time_left, waiting_jobs


def test_a_running_job_is_expected_to_take_what_the_same_work_took_on_another_fold():
    finished = [Job("train", 420.0, "train structrank"), *(Job("train", 10.0, f"train m{i}") for i in range(8))]
    running = [Job("train", 60.0, "train structrank")]
    # 360 s left of StructRank's 420, whatever the quick trainings beside it: nothing else waits
    assert time_left(finished, running, {}, wall=500.0) == pytest.approx(360.0)


def test_a_job_longer_than_all_its_rules_finished_jobs_is_given_as_long_again():
    assert expected_total(300.0, [10.0, 12.0, 20.0], prior=14.0) == 600.0
    assert expected_total(11.0, [10.0, 12.0, 20.0], prior=14.0) == 16.0  # the mean of those longer
    assert expected_total(3.0, [], prior=14.0) == 14.0  # a rule never seen: the mean job, at least 2x
    assert expected_total(9.0, [], prior=14.0) == 18.0


def test_the_jobs_waiting_take_their_rules_mean_with_each_kind_weighed_alike():
    # three folds of a 10 s method done, one of a 100 s one: a training left is (10 + 100) / 2, not 32.5
    finished = [Job("train", 10.0, "train quick")] * 3 + [Job("train", 100.0, "train slow")]
    finished += [Job("evaluate", 5.0, "evaluate quick")]
    assert time_left(finished, [], {"train": 2}, wall=135.0) == pytest.approx(2 * 55.0)  # one job at a time
    # a rule not seen yet: the rules seen weighed alike, (55 + 5) / 2
    assert time_left(finished, [], {None: 1, "evaluate": 1}, wall=135.0) == pytest.approx(30.0 + 5.0)


def test_the_work_left_is_shared_by_as_many_jobs_as_ran_at_once_so_far():
    finished = [Job("evaluate", 2.0)] * 10  # 20 job-seconds in 10 s: two at once
    assert time_left(finished, [], {"evaluate": 10}, wall=10.0) == pytest.approx(10.0)
    assert time_left([], [Job("train", 5.0)], {"train": 1}, wall=5.0) is None  # nothing finished yet


def test_the_jobs_waiting_are_snakemakes_plan_less_those_done_and_running():
    plan = {"parse": 2, "train": 4, "tables": 1}
    finished, running = [Job("parse", 1.0)] * 2 + [Job("train", 5.0)], [Job("train", 1.0)]
    assert waiting_jobs(plan, finished, running, left=3) == {"train": 2, "tables": 1}
    assert waiting_jobs(plan, finished, running, left=5) == {"train": 2, "tables": 1, None: 2}  # the DAG grew
    assert waiting_jobs(plan, finished, running, left=2) == {"train": 2}  # cut from the plan's last rules
    assert waiting_jobs({}, finished, running, left=3) == {None: 3}  # no plan seen


def simulate(jobs: list[tuple[str, float, str]], cores: int = 2) -> list[tuple[float, float | None, float]]:
    """The jobs run in their order on ``cores`` slots; at each job's end (when Snakemake logs
    progress), the true time left, the old estimate (the mean pace of the steps done) and the new."""
    plan: dict[str, int] = {}
    for rule, _, _ in jobs:
        plan[rule] = plan.get(rule, 0) + 1
    now, queue, running, finished, rows = 0.0, list(jobs), [], [], []
    while queue or running:
        while queue and len(running) < cores:
            rule, seconds, kind = queue.pop(0)
            heapq.heappush(running, (now + seconds, len(finished) + len(running) + len(queue), rule, now, kind))
        end, _, rule, start, kind = heapq.heappop(running)
        now = end
        finished.append(Job(rule, end - start, kind))
        if queue or running:
            busy = [Job(r, now - s, k) for _, _, r, s, k in running]
            new = time_left(finished, busy, waiting_jobs(plan, finished, busy, len(queue)), now)
            rows.append((now, now / len(finished) * (len(jobs) - len(finished)), new))
    return [(end_time - now_, old, new) for end_time in [now] for now_, old, new in rows]


def leaderboard_like(seed: int) -> list[tuple[str, float, str]]:
    """Five folds prepared, then ten methods trained and evaluated per fold in a random order, one
    of them StructRank at 7 minutes a fold, then the report."""
    rng = random.Random(seed)
    methods = {f"m{i}": rng.uniform(5, 30) for i in range(9)} | {"structrank": 420.0}
    jobs = [(rule, seconds, "") for _ in range(5) for rule, seconds in (("parse", 3), ("clean", 2), ("featurize", 4))]
    for _ in range(5):
        for method, seconds in rng.sample(sorted(methods.items()), len(methods)):
            jobs += [("train", seconds * rng.uniform(0.8, 1.2), f"train {method}"), ("evaluate", 2.0, f"evaluate {method}")]
    return jobs + [("aggregate", 1.5, "")] * len(methods) + [("tables", 15.0, ""), ("log_runs", 12.0, "")]


def default_like(seed: int) -> list[tuple[str, float, str]]:
    """The default study's shape: five folds prepared, twelve trainings a fold of 2-8 s but
    LambdaMART's 25 s, then the report."""
    rng = random.Random(seed)
    jobs = [(rule, seconds, "") for _ in range(5)
            for rule, seconds in (("parse", 2), ("clean", 1.5), ("featurize", 3), ("pairs", 2))]
    methods = {f"m{i}": rng.uniform(2, 8) for i in range(11)} | {"lambdamart": 25.0}
    for _ in range(5):
        for method, seconds in rng.sample(sorted(methods.items()), len(methods)):
            jobs += [("train", seconds * rng.uniform(0.8, 1.2), f"train {method}"), ("evaluate", 1.5, f"evaluate {method}")]
    return jobs + [("aggregate", 1.0, "")] * 12 + [("tables", 10.0, ""), ("log_runs", 12.0, "")]


def accuracy(runs: list[list[tuple[float, float | None, float]]]) -> dict[str, tuple[float, float]]:
    """Per estimate, old and new: the median over runs of its median ratio to the truth, and its
    mean |log ratio| over every progress line of every run."""
    out = {}
    for name, column in (("old", 1), ("new", 2)):
        ratios = [[row[column] / row[0] for row in rows] for rows in runs]
        out[name] = (statistics.median(statistics.median(r) for r in ratios),
                     statistics.mean(abs(math.log(x)) for r in ratios for x in r))
    return out


def test_on_runs_whose_long_jobs_come_late_the_estimate_is_no_longer_half_the_truth():
    got = accuracy([simulate(leaderboard_like(seed)) for seed in range(8)])
    (old_ratio, old_error), (new_ratio, new_error) = got["old"], got["new"]
    assert old_ratio < 0.75, got  # the mean pace of the steps done: about 1.5-3x optimistic (0.63 on these eight runs)
    assert 0.85 < new_ratio < 1.15, got  # 0.95
    assert new_error < 0.7 * old_error, got  # 0.56 against 0.86


def test_on_runs_of_quick_jobs_the_estimate_is_as_good_as_the_mean_pace():
    got = accuracy([simulate(default_like(seed)) for seed in range(8)])
    (old_ratio, old_error), (new_ratio, new_error) = got["old"], got["new"]
    assert 0.9 < new_ratio < 1.1, got  # 0.97 (the mean pace 0.89)
    assert new_error < old_error + 0.05, got  # 0.24 and 0.24
