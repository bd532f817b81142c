"""Which of a run's fits other code made, and the command that redoes them.

A change of the package reruns nothing: the train jobs run by ``shell:`` (Snakemake does not watch
their code) and code is no job's parameter, so that an edit of a docstring or of a module a study
does not use retrains no fold. Each fit records the digest of the code that made it
(``fit.json``'s ``code_digest``, rankstudy.tracking.provenance.code_digest); a run compares them
with its own code and says how many fits other code made and how to redo them: before anything
runs (a run with nothing to do ends without its closing summary) and in its last lines."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path

from rankstudy.pipeline import layout
from rankstudy.pipeline.records import FitRecord, RecordError
from rankstudy.tracking.provenance import code_digest
from rankstudy.util import atomic

NAMED = 3  # fits named on the terminal, and given to --forcerun on it; more go to a file
LIST_FILE = f"{layout.RESULTS}/runs/{{study}}/fits-by-other-code.txt"


def fits_by_other_code(fits: Iterable[str | Path], current: str) -> tuple[list[Path], int]:
    """The fit.json files among ``fits`` made by code other than ``current`` (one without a
    digest counts: an older rankstudy made it), and how many fits were read (a missing or
    unreadable file is not counted: the run did not make it)."""
    other, read = [], 0
    for path in map(Path, fits):
        try:
            digest = FitRecord.read(path).code_digest
        except (OSError, ValueError, RecordError):
            continue
        read += 1
        if digest != current:
            other.append(path)
    return other, read


def other_code_lines(fits: Iterable[str | Path], study: str, current: str | None = None) -> list[str]:
    """Two lines on the fits made by other code ([] when there are none): how many, the first
    few, and the command that retrains them. With more than :data:`NAMED` (and not every fit),
    their model files are listed in :data:`LIST_FILE` for the command to read; the list of an
    earlier run goes when every fit is this code's."""
    current = current or code_digest()
    other, read = fits_by_other_code(fits, current)
    listing = Path(LIST_FILE.format(study=study))
    if not other:
        listing.unlink(missing_ok=True)
        return []
    models = [str(path.with_name(layout.TRAIN_OUTPUTS["model"])) for path in other]
    if len(other) == read:
        targets = "train"
    elif len(other) <= NAMED:
        targets = " ".join(map(shlex.quote, models))
    else:
        atomic.write_text(listing, "".join(f"{m}\n" for m in models))
        targets = f"$(cat {shlex.quote(str(listing))})"
    runs = Path(layout.RESULTS) / "runs" / study
    shown = ", ".join(str(p.parent.relative_to(runs) if p.is_relative_to(runs) else p.parent) for p in other[:NAMED])
    more = f" and {len(other) - NAMED} more" if len(other) > NAMED else ""
    return [f"{len(other)} of {read} fits were made by other code than this rankstudy's ({current}, "
            f"fit.json's code_digest), and so their results: {shown}{more}",
            f"to retrain them: snakemake --cores 2 <this run's --configfile/--config> --forcerun {targets}"]
