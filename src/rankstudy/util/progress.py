"""Progress lines for long loops (solver iterations, boosting rounds, epochs): a job that runs
for minutes shows in its log that it is alive, how far it is and how long it may still take.

A line is printed once ``interval`` seconds have passed since the start or the previous line (30
by default, ``RANKSTUDY_PROGRESS_SECONDS`` to change it), and on the last step of a loop that
printed before; a loop that ends sooner prints nothing, so short fits do not flood the logs."""

from __future__ import annotations

import os
import time


def _interval() -> float:
    try:
        return float(os.environ.get("RANKSTUDY_PROGRESS_SECONDS", "30"))
    except ValueError:
        return 30.0


class Progress:
    """``Progress("lbfgs", total=200).update(i, loss=...)``; ``total`` is an upper bound where
    the loop may stop early (then the remaining time is an upper bound too)."""

    def __init__(self, label: str, total: int | None = None, unit: str = "step",
                 interval: float | None = None) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.interval = _interval() if interval is None else float(interval)
        self.start = time.monotonic()
        self.last = self.start
        self.printed = False

    def update(self, done: int, **info) -> bool:
        """Report ``done`` steps (and ``info``) if it is time; returns whether a line was printed."""
        now = time.monotonic()
        final = self.total is not None and done >= self.total
        if not (now - self.last >= self.interval or (final and self.printed)):
            return False
        self.last, self.printed = now, True
        elapsed = now - self.start
        parts = [f"{self.unit} {done}" + (f"/{self.total}" if self.total else ""), f"elapsed {elapsed:.1f} s"]
        if self.total and 0 < done < self.total:
            parts.append(f"remaining <= {elapsed / done * (self.total - done):.0f} s")
        parts += [f"{k} {v:.6g}" if isinstance(v, float) else f"{k} {v}" for k, v in info.items()]
        print(f"[{self.label}] " + ", ".join(parts), flush=True)
        return True
