"""Make a data set available: the embedded generator needs nothing; a registry data set is
used as is when its files are under data_root, else downloaded and unpacked there."""

from pathlib import Path

from rankstudy.util import atomic
from rankstudy.data import registry as datasets
from rankstudy.pipeline.jobs import job_logging

with job_logging(snakemake, "fetch_dataset"):
    name = snakemake.wildcards.dataset
    entry = snakemake.params.entry
    if entry["source"] == "synthetic":
        source = {"name": name, "source": "synthetic", "seed": snakemake.params.seed,
                  **snakemake.params.synthetic}
    elif entry["source"] == "synthetic_qa":
        source = {"name": name, "source": "synthetic_qa", "seed": snakemake.params.seed,
                  **snakemake.params.synthetic_qa}
    elif entry["source"] == "qa_table":
        path = datasets.qa_table_file(name, entry, Path(snakemake.params.data_root).resolve())
        source = {"name": name, "source": "qa_table", "seed": snakemake.params.seed, "file": str(path),
                  "vocabulary": entry.get("vocabulary", 3000), "root": str(path.parent)}
    else:
        data_root = Path(snakemake.params.data_root).resolve()
        # only the folds of this run must be there; read from the config rather than a param, since
        # a changed param would rerun this job and so every fold downstream of it
        folds = [int(f) for f in snakemake.config["folds"]]
        root = datasets.ensure_available(name, entry, data_root, data_root / "_downloads", progress=print,
                                         folds=folds)
        source = {"name": name, "source": entry["source"], "data_root": str(data_root), "seed": snakemake.params.seed,
                  "root": str(Path(root).resolve()), "entry": entry}
    print(f"data set {name}: {source.get('root', 'embedded generator')}")
    atomic.write_json(snakemake.output[0], source)
