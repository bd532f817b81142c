"""The fraction-cost benchmark's arithmetic: a step's CPU as a + b n through the largest and the
smallest split measured, and the share a fraction of a larger fold is predicted to cost."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "bench_fraction_cost", Path(__file__).resolve().parents[1] / "benchmarks" / "bench_fraction_cost.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)
step_line, predicted_shares = bench.step_line, bench.predicted_shares


def test_the_step_line_goes_through_the_largest_and_the_smallest_split():
    # 8 ms a step whatever the data, 0.7 us a document; the middle point off the line is not used
    points = [(13_000, 0.008 + 0.7e-6 * 13_000), (20_000, 1.0), (72_000, 0.008 + 0.7e-6 * 72_000)]
    a, b = step_line(points)
    assert a == pytest.approx(0.008) and b == pytest.approx(0.7e-6)


def test_a_fraction_costs_its_share_plus_the_fixed_part_and_the_validation_split_that_grows_with_the_fold():
    small = predicted_shares(0.008, 0.7e-6, 0.002, 72_000, [0.2])[0.2]
    assert small == pytest.approx((0.008 + 0.7e-6 * 14_400 + 0.002) / (0.008 + 0.7e-6 * 72_000 + 0.002))
    # on a larger fold the fixed part weighs less: the share tends to the fraction, plus the validation's part
    large = predicted_shares(0.008, 0.7e-6, 0.0, 2_270_000, [0.2])[0.2]
    assert 0.2 < large < small
    with_vali = predicted_shares(0.0, 1e-6, 0.5, 1_000_000, [0.2])[0.2]
    assert with_vali == pytest.approx((0.2 + 0.5) / (1.0 + 0.5))
    assert predicted_shares(0.0, 1e-6, 0.0, 1000, [0.25]) == {0.25: pytest.approx(0.25)}
