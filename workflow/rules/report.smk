# Stage 5: comparison tables (methods x metrics, mean +- std over folds, paired significance
# against the baseline) and NDCG@k plots per study and data set; then log_runs writes every MLflow
# run of the study and data set (the only rule that does).


rule tables:
    input:
        per_query=dataset_per_query,
        summaries=dataset_summaries,
        fold_meta=dataset_fold_metas,  # validation split sizes: the tables warn when they are small
    output:
        csv=f"{L.TABLES}.csv",
        md=f"{L.TABLES}.md",
        tex=f"{L.TABLES}.tex",
        pairs=f"{L.TABLES}.pairs.csv",  # every tested pair (report.compare)
        html=table_in_report(f"{L.TABLES}.html", "comparison", "html", "table.rst"),
        plot=report(f"{L.PLOTS}.ndcg_at_k.png", caption="../report/ndcg_at_k.rst", category="Plots",
                    subcategory="{dataset}"),
        plot_p=report(f"{L.PLOTS}.p_at_k.png", caption="../report/p_at_k.rst", category="Plots",
                      subcategory="{dataset}"),
        timing_csv=f"{L.TABLES}.timing.csv",
        timing_md=f"{L.TABLES}.timing.md",
        params_csv=f"{L.TABLES}.params.csv",
        params_md=f"{L.TABLES}.params.md",
        tuning_csv=f"{L.TABLES}.tuning.csv",  # each tuned fold's budget and what it spent (header only: none)
        # page_<name>: the page of output <name> (the script writes one per page_ output)
        page_csv=table_page("comparison", "table.rst", "csv"),
        page_md=table_page("comparison", "table.rst", "md"),
        page_tex=table_page("comparison", "table.rst", "tex"),
        page_pairs=table_page("pairs", "pairs.rst", "pairs.csv"),
        page_timing_csv=table_page("timing", "timing.rst", "timing.csv"),
        page_timing_md=table_page("timing", "timing.rst", "timing.md"),
        page_params_csv=table_page("params", "params.rst", "params.csv"),
        page_params_md=table_page("params", "params.rst", "params.md"),
    params:
        systems=study_systems(),  # in the order of input.per_query and input.summaries
        palette=list(config["methods"]),  # every method the study defines: one colour each, whatever runs
        folds=FOLDS,
        baseline=SETTINGS.baseline,
        report=config["report"],
        evaluation=EVALUATION,
        cleaning=L.cleaning_rules(config["cleaning"]),
    log:
        L.log("tables"),
    benchmark:
        L.benchmark("tables")
    threads: 1
    resources:
        mem_mb=job_mem_mb(base=1500, per_input_mb=3),
        runtime=job_runtime(),
    conda:
        ENV
    script:
        "../scripts/tables.py"


# What the study run in MLflow keeps of the tables job's files (its outputs of these names)
LOGGED_TABLES = ("csv", "md", "tex", "html", "pairs", "timing_csv", "timing_md", "params_csv", "params_md", "plot",
                 "plot_p")


rule log_runs:
    input:
        mlflow=dataset_mlflow_plans,  # every method's fold runs and parent, as its aggregate job planned them
        tables=[rules.tables.output[name] for name in LOGGED_TABLES],  # the study run's artifacts
        caption=rules.tables.output.md,
    output:
        runs=L.RUNS_LOGGED,  # the run ids it logged
    params:
        # no MLflow settings: where the job logs to is not what it computes, so it is read from
        # the config (a changed store reruns nothing, and no path shows in the report's params)
        metrics=config["report"]["metrics"],  # the saved view's columns
        baseline=SETTINGS.baseline,
        folds=FOLDS,
    log:
        L.log("log_runs"),
    benchmark:
        L.benchmark("log_runs")
    threads: 1
    resources:
        mem_mb=job_mem_mb(base=1000),
        runtime=job_runtime(),
    conda:
        ENV
    script:
        "../scripts/log_runs.py"


rule paper_table:
    input:
        unpack(dataset_transforms),
        unpack(dataset_test_scores),
        per_query=dataset_per_query,
        summaries=dataset_summaries,
    output:
        md=f"{L.TABLES}.paper.md",
        csv=f"{L.TABLES}.paper.csv",
        html=table_in_report(f"{L.TABLES}.paper.html", "paper", "paper.html", "paper_table.rst"),
    params:
        systems=study_systems(),
        featuresets=list(FEATURESETS),
        paper=config.get("paper", {}),
        folds=FOLDS,
    log:
        L.log("paper_table"),
    benchmark:
        L.benchmark("paper_table")
    threads: 1
    resources:
        mem_mb=job_mem_mb(base=1500, per_input_mb=3),
        runtime=job_runtime(),
    conda:
        ENV
    script:
        "../scripts/paper_table.py"


# Dubey et al.'s sampler studies (Section 5.3): accuracy against a parameter swept across methods
# (report.sweep), and the Delta of the sampled rankings around each restart state (report.delta_smear).


rule sweep_plot:
    input:
        per_query=dataset_per_query,
    output:
        png=report(f"{L.PLOTS}.sweep.png", caption="../report/sweep.rst", category="Plots", subcategory="{dataset}"),
        csv=f"{L.TABLES}.sweep.csv",
    params:
        systems=study_systems(),
        sweep=config["report"].get("sweep", {}),
        methods={m: config["methods"][m] for m in METHODS},
        featuresets=list(FEATURESETS),
        metrics=config["report"]["metrics"],
    log:
        L.log("sweep_plot"),
    benchmark:
        L.benchmark("sweep_plot")
    threads: 1
    resources:
        mem_mb=job_mem_mb(base=1500, per_input_mb=3),
        runtime=job_runtime(),
    conda:
        ENV
    script:
        "../scripts/sweep_plot.py"


rule delta_smear:
    input:
        train=delta_smear_train,  # common.smk
    output:
        png=report(f"{L.PLOTS}.delta_smear.png", caption="../report/delta_smear.rst", category="Plots",
                   subcategory="{dataset}"),
        csv=f"{L.TABLES}.delta_smear.csv",
    params:
        smear=config["report"].get("delta_smear", {}),
        rel_threshold=EVALUATION["rel_threshold"],
        seed=config["seed"],
    log:
        L.log("delta_smear"),
    benchmark:
        L.benchmark("delta_smear")
    threads: 1
    resources:
        mem_mb=job_mem_mb(base=1500, per_input_mb=3),
        runtime=job_runtime(),
    conda:
        ENV
    script:
        "../scripts/delta_smear.py"


# The study's leaderboard over its data sets (report.leaderboard): per data set the systems ranked
# by one metric with the all-pairs top group, and across data sets the mean rank; a heat map.


rule leaderboard:
    input:
        numbers=expand(f"{L.TABLES}.csv", study=STUDY, dataset=DATASETS),
        pairs=expand(f"{L.TABLES}.pairs.csv", study=STUDY, dataset=DATASETS),
        timing=expand(f"{L.TABLES}.timing.csv", study=STUDY, dataset=DATASETS),
        tuning=expand(f"{L.TABLES}.tuning.csv", study=STUDY, dataset=DATASETS),
    output:
        csv=f"{L.LEADERBOARD}.csv",
        md=f"{L.LEADERBOARD}.md",
        html=report(f"{L.LEADERBOARD}.html", caption="../report/leaderboard.rst", category="Leaderboard",
                    labels={"page": "leaderboard", "file": "html"}),
        png=report(L.LEADERBOARD_PLOT, caption="../report/leaderboard.rst", category="Leaderboard",
                   labels={"page": "leaderboard", "file": "heat map"}),
    params:
        datasets=DATASETS,  # in the order of the inputs
        metric=config["report"].get("leaderboard", {}).get("metric"),
        alpha=config["report"]["alpha"],
        folds=FOLDS,
        pruner=(config.get("tune") or {}).get("pruner"),  # the budget's is in each fold's fit.json; not this
        methods={m: config["methods"][m] for m in METHODS},  # what "default" means for the kinds on the board
    log:
        L.log("leaderboard"),
    benchmark:
        L.benchmark("leaderboard")
    threads: 1
    resources:
        mem_mb=job_mem_mb(base=1000),
        runtime=job_runtime(),
    conda:
        ENV
    script:
        "../scripts/leaderboard.py"
