"""Make a data set available: a generator needs nothing; a registry data set is used as is when
its files are under data_root, else downloaded and unpacked there.

source.json records paths relative to data_root (``root``, ``file``), never this machine's
absolute paths: the next job takes data_root from the config, so results stay portable."""

from pathlib import Path

from rankstudy.util import atomic
from rankstudy.data import registry as datasets
from rankstudy.pipeline.jobs import job_logging


def relative(path: Path, data_root: Path) -> str:
    try:
        return path.resolve().relative_to(data_root.resolve()).as_posix()
    except ValueError:  # a `local` entry's folder outside data_root: as its registry entry names it
        return str(path)


with job_logging(snakemake, "fetch_dataset"):
    name, settings = snakemake.params.dataset, snakemake.params.source
    # as configured: relative to the project (where jobs run) or absolute; never recorded as resolved.
    # Taken from the config, not a param: moving the data folder must not rerun anything.
    data_root = Path(snakemake.config["data_root"])
    entry = settings.get("entry")
    shown = "embedded generator"
    if entry is None:  # a generated data set: its settings are its content
        source = {"name": name, **settings}
    elif entry["source"] == "qa_table":
        path = datasets.qa_table_file(name, entry, data_root)
        source = {"name": name, "source": "qa_table", "seed": settings["seed"],
                  "file": relative(path, data_root), "vocabulary": entry.get("vocabulary", 3000),
                  "root": relative(path.parent, data_root), "paths": "relative to data_root"}
        shown = datasets.shown_path(path, data_root)
    else:
        # only the folds of this run must be there; read from the config rather than a param, since
        # a changed param would rerun this job and so every fold downstream of it
        folds = [int(f) for f in snakemake.config["folds"]]
        root = datasets.ensure_available(name, entry, data_root, data_root / "_downloads", progress=print,
                                         folds=folds)
        source = {"name": name, "source": entry["source"], "root": relative(Path(root), data_root),
                  "paths": "relative to data_root", "entry": entry,
                  **({"seed": settings["seed"]} if "seed" in settings else {})}
        shown = datasets.shown_path(root, data_root)
    print(f"data set {name}: {shown}")
    atomic.write_json(snakemake.output[0], source)
