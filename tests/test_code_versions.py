"""A change of the package reruns nothing (issue 45.4): each fit records a digest of the code that
made it, and a run says how many of its fits other code made, with the command that redoes them."""

from __future__ import annotations

import json
import shlex
import shutil
import time
from pathlib import Path

from rankstudy.pipeline import layout
from rankstudy.pipeline.code_versions import LIST_FILE, NAMED, other_code_lines
from rankstudy.pipeline.records import FitRecord
from rankstudy.pipeline.summary import run_summary
from rankstudy.tracking.provenance import PACKAGE_DIR, code_digest


def test_the_code_digest_names_the_packages_source_wherever_it_is(tmp_path):
    """The same for a copy elsewhere (a clone, a SLURM node's checkout), different for a changed
    module, committed or not, and for a module added or renamed."""
    copy = tmp_path / "a" / "rankstudy"
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert code_digest(copy) == code_digest(PACKAGE_DIR) == code_digest()
    assert len(code_digest()) == 16
    (copy / "__pycache__").mkdir(exist_ok=True)
    (copy / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"compiled")  # not source
    (copy / "notes.txt").write_text("not source")
    code_digest.cache_clear()
    assert code_digest(copy) == code_digest(PACKAGE_DIR)
    variants = []
    for change in ("edit", "add", "rename"):
        tree = tmp_path / change / "rankstudy"
        shutil.copytree(copy, tree)
        module = tree / "data" / "cleaning.py"
        if change == "edit":  # one character of a comment
            text = module.read_text()
            assert "# which documents" in text
            module.write_text(text.replace("# which documents", "# which document"))
        elif change == "add":
            (tree / "data" / "extra.py").write_text("")
        else:
            module.rename(tree / "data" / "cleaning2.py")
        variants.append(code_digest(tree))
    assert len({code_digest(copy), *variants}) == 4


def write_fit(path: Path, digest: str | None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    record = FitRecord(kind="linear", params={"l2": 0.01}, grid={}, seed=1, selection={}, uid="u", git_commit="c",
                       started_ms=0, finished_ms=1, code_digest=digest).to_dict()
    if digest is None:  # written by a rankstudy that did not record its code
        del record["code_digest"]
    path.write_text(json.dumps(record))
    return path


def fit_paths(n: int, study: str = "s") -> list[Path]:
    return [Path(layout.fill(f"{layout.FOLD_DIR}/fit.json", study=study, dataset="MQ2008", featureset="first",
                             method=f"m{i // 5}", fold=i % 5 + 1)) for i in range(n)]


def test_fits_made_by_other_code_are_counted_named_and_given_a_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fits = fit_paths(10)
    for i, path in enumerate(fits):
        write_fit(path, "0" * 16 if i in (3, 7) else None if i == 8 else "current")
    listing = Path(LIST_FILE.format(study="s"))
    first, command = other_code_lines(fits + [Path("results/runs/s/missing/fit.json")], "s", current="current")
    assert first == ("3 of 10 fits were made by other code than this rankstudy's (current, fit.json's code_digest), "
                     "and so their results: MQ2008/first/m0/fold4, MQ2008/first/m1/fold3, MQ2008/first/m1/fold4")
    targets = shlex.split(command.split(" --forcerun ", 1)[1])
    assert command.startswith("to retrain them: snakemake --cores 2 <this run's --configfile/--config> --forcerun ")
    assert targets == [str(fits[i].with_name("model.json")) for i in (3, 7, 8)] and not listing.exists()
    # more than NAMED: their model files in a list the command reads
    write_fit(fits[0], None)
    first, command = other_code_lines(fits, "s", current="current")
    assert first.startswith("4 of 10 fits") and first.endswith("MQ2008/first/m1/fold3 and 1 more") and NAMED == 3
    assert command.endswith(f"--forcerun $(cat {listing})")
    assert listing.read_text().split() == [str(fits[i].with_name("model.json")) for i in (0, 3, 7, 8)]
    # every fit: every train job of the run
    for path in fits:
        write_fit(path, "older")
    assert other_code_lines(fits, "s", current="current")[1].endswith("--forcerun train")
    # none: nothing said, and the earlier list goes
    for path in fits:
        write_fit(path, "current")
    assert other_code_lines(fits, "s", current="current") == [] and not listing.exists()


def test_the_closing_summary_says_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fits = fit_paths(2, study="default")
    write_fit(fits[0], code_digest())
    write_fit(fits[1], "0123456789abcdef")
    lines = run_summary("default", ["MQ2008"], time.time(), fits=[str(f) for f in fits]).splitlines()
    assert lines[1] == (f"  code:    1 of 2 fits were made by other code than this rankstudy's ({code_digest()}, "
                        "fit.json's code_digest), and so their results: MQ2008/first/m0/fold2")
    assert lines[2] == ("           to retrain them: snakemake --cores 2 <this run's --configfile/--config> --forcerun "
                        f"{fits[1].with_name('model.json')}")
    write_fit(fits[1], code_digest())
    assert "code:" not in run_summary("default", ["MQ2008"], time.time(), fits=[str(f) for f in fits])

