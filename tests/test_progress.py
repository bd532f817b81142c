"""Progress lines: every interval, and the end of a loop that printed before; nothing for
a loop shorter than the interval."""

from __future__ import annotations

from rankstudy.util import progress


def test_progress_throttles_and_reports_the_end(capsys, monkeypatch):
    clock = iter([0.0, 1.0, 2.0, 31.0, 40.0, 62.0, 70.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    p = progress.Progress("lbfgs", total=10, unit="iteration", interval=30)
    printed = [p.update(i, loss=0.5) for i in (1, 2, 3, 4, 5, 10)]
    assert printed == [False, False, True, False, True, True]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[lbfgs] iteration 3/10, elapsed 31.0 s, remaining <= 72 s, loss 0.5"
    assert lines[1].startswith("[lbfgs] iteration 5/10, elapsed 62.0 s, remaining <= 62 s")
    assert lines[2].startswith("[lbfgs] iteration 10/10, elapsed 70.0 s, loss")


def test_a_short_loop_prints_nothing(capsys, monkeypatch):
    clock = iter([0.0, 1.0, 2.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    p = progress.Progress("rankboost", total=2, unit="round", interval=30)
    assert not p.update(1) and not p.update(2)
    assert capsys.readouterr().out == ""


def test_interval_from_the_environment(monkeypatch):
    monkeypatch.setenv("RANKSTUDY_PROGRESS_SECONDS", "5")
    assert progress.Progress("x").interval == 5.0
    monkeypatch.setenv("RANKSTUDY_PROGRESS_SECONDS", "soon")
    assert progress.Progress("x").interval == 30.0
