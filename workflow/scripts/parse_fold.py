"""Parse (or generate) one fold's train/vali/test splits once and cache them as binary .npz
files, which every protocol's cleaning reads; later rules never reparse text."""

from rankstudy.data.folds import SPLITS, load_fold
from rankstudy.data.kinds import save_split
from rankstudy.pipeline.jobs import job_logging
from rankstudy.pipeline.records import ParsedFold
from rankstudy.util import atomic

with job_logging(snakemake, "parse_fold"):
    name, fold_number = snakemake.params.dataset, int(snakemake.wildcards.fold)
    # file names are relative to data_root (taken from the config, not a param: moving the data
    # folder must not rerun the fold), and parsed.json records them so
    fold = load_fold(name, atomic.read_json(snakemake.input[0]), fold_number, data_root=snakemake.config["data_root"])
    for s in SPLITS:
        save_split(fold.splits[s], snakemake.output[s])
    record = ParsedFold.of(name, fold_number, fold)
    record.write(snakemake.output.meta)
    print(record)
