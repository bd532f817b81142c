"""Clean one parsed fold as the protocol says (rankstudy.data.folds.clean) and record what went
(meta.json: sizes, what each cleaning step dropped, the fingerprint of the cleaned data)."""

from rankstudy.data.folds import SPLITS, EmptySplitError, Fold, clean
from rankstudy.data.kinds import load_split, save_split
from rankstudy.pipeline.jobs import job_logging
from rankstudy.pipeline.records import FoldMeta, ParsedFold

with job_logging(snakemake, "clean_fold"):
    parsed = ParsedFold.read(snakemake.input.parsed)
    fold = Fold({s: load_split(snakemake.input[s]) for s in SPLITS}, parsed.max_label, parsed.files)
    try:
        clean(fold, snakemake.params.cleaning, snakemake.params.rel_threshold)
    except EmptySplitError as exc:
        raise EmptySplitError(f"data set {parsed.dataset}, fold {parsed.fold}: {exc}") from None
    for key, n in fold.dropped.items():
        print(f"cleaning {key}: dropped {n}")
    meta = FoldMeta.of(parsed, fold, snakemake.params.cleaning, snakemake.params.rel_threshold)
    for s in SPLITS:
        save_split(fold.splits[s], snakemake.output[s])
    meta.write(snakemake.output.meta)
    print(meta)
