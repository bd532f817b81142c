"""The smear of the sampled Delta around each restart state (Dubey et al., Figure 7), on one
fold's training split: a density per restart and the histogram counts behind it."""

import numpy as np
import pandas as pd

from rankstudy.data.kinds import load_split
from rankstudy.losses.swap_sampler import SamplerSettings
from rankstudy.pipeline.jobs import job_logging
from rankstudy.reporting import sampler_studies
from rankstudy.reporting.plots import save_figure
from rankstudy.util import atomic

with job_logging(snakemake, "delta_smear"):
    w, p = snakemake.wildcards, snakemake.params
    smear_spec = dict(p.smear)
    gain, k, bins = smear_spec["gain"], smear_spec["k"], smear_spec["bins"]  # schema defaults
    # Figure 7 seeds walks at Delta = 0, ~0.5 and 1, equally often
    settings = SamplerSettings(sample_size=smear_spec["sample_size"], walk_length=smear_spec["walk_length"],
                               restart_states=smear_spec["restart_states"], restart_skew=smear_spec["restart_skew"],
                               seed=p.seed)
    train = load_split(snakemake.input.train)
    smear = sampler_studies.delta_smear(train.y, train.offsets, settings, gain, k, p.rel_threshold)
    edges = np.linspace(0.0, 1.0, bins + 1)
    counts = pd.DataFrame([{"restart": r, "bin_low": lo, "bin_high": hi, "count": int(c)}
                           for r, group in smear.groupby("restart")
                           for lo, hi, c in zip(edges[:-1], edges[1:], np.histogram(group["delta"], edges)[0])])
    atomic.write_csv(counts, snakemake.output.csv)
    save_figure(sampler_studies.delta_smear_figure(smear, gain, bins,
                                                   title=f"{w.dataset}: Delta smear per restart state"),
                snakemake.output.png)
    print(smear.groupby("restart")["delta"].describe().to_string())
