# Stage 5: comparison tables (methods x metrics, mean +- std over folds, paired significance
# against the baseline) and NDCG@k plots per study and data set, also logged to MLflow.


rule tables:
    input:
        per_query=dataset_per_query,
    output:
        csv=report("results/tables/{study}/{dataset}.csv", caption="../report/table.rst",
                   category="Tables", subcategory="{dataset}"),
        md="results/tables/{study}/{dataset}.md",
        tex="results/tables/{study}/{dataset}.tex",
        html=report("results/tables/{study}/{dataset}.html", caption="../report/table.rst",
                    category="Tables", subcategory="{dataset}"),
        plot=report("results/plots/{study}/{dataset}.ndcg_at_k.png", caption="../report/ndcg_at_k.rst",
                    category="Plots", subcategory="{dataset}"),
        plot_p=report("results/plots/{study}/{dataset}.p_at_k.png", caption="../report/p_at_k.rst",
                      category="Plots", subcategory="{dataset}"),
        timing_csv="results/tables/{study}/{dataset}.timing.csv",
        timing_md="results/tables/{study}/{dataset}.timing.md",
    params:
        folds=FOLDS,
        featuresets=list(FEATURESETS),
        methods=METHODS,
        baseline=SETTINGS.baseline,
        report=config["report"],
        evaluation=config["evaluation"],
        cleaning=config.get("cleaning", {}),
        mlflow=MLFLOW,
    log:
        "results/logs/tables/{study}/{dataset}.log",
    benchmark:
        "results/benchmarks/tables/{study}/{dataset}.tsv"
    threads: 1
    resources:
        mem_mb=job_mem_mb(base=1500, per_input_mb=3),
        runtime=job_runtime(),
    conda:
        ENV
    script:
        "../scripts/tables.py"


rule paper_table:
    input:
        per_query=dataset_per_query,
        transforms=dataset_transforms,
    output:
        md="results/tables/{study}/{dataset}.paper.md",
        csv="results/tables/{study}/{dataset}.paper.csv",
        html=report("results/tables/{study}/{dataset}.paper.html", caption="../report/paper_table.rst",
                    category="Tables", subcategory="{dataset}"),
    params:
        paper=config.get("paper", {}),
        folds=FOLDS,
    log:
        "results/logs/paper_table/{study}/{dataset}.log",
    benchmark:
        "results/benchmarks/paper_table/{study}/{dataset}.tsv"
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
        png=report("results/plots/{study}/{dataset}.sweep.png", caption="../report/sweep.rst",
                   category="Plots", subcategory="{dataset}"),
        csv="results/tables/{study}/{dataset}.sweep.csv",
    params:
        sweep=config["report"].get("sweep", {}),
        methods={m: config["methods"][m] for m in METHODS},
        featuresets=list(FEATURESETS),
        metrics=config["report"].get("metrics", config["evaluation"]["metrics"]),
    log:
        "results/logs/sweep_plot/{study}/{dataset}.log",
    benchmark:
        "results/benchmarks/sweep_plot/{study}/{dataset}.tsv"
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
        train=lambda w: f"results/data/{w.dataset}/fold{config['report']['delta_smear'].get('fold', FOLDS[0])}/train.npz",
    output:
        png=report("results/plots/{study}/{dataset}.delta_smear.png", caption="../report/delta_smear.rst",
                   category="Plots", subcategory="{dataset}"),
        csv="results/tables/{study}/{dataset}.delta_smear.csv",
    params:
        smear=config["report"].get("delta_smear", {}),
        rel_threshold=config["evaluation"].get("rel_threshold", 1),
        seed=config.get("seed", 0),
    log:
        "results/logs/delta_smear/{study}/{dataset}.log",
    benchmark:
        "results/benchmarks/delta_smear/{study}/{dataset}.tsv"
    threads: 1
    resources:
        mem_mb=job_mem_mb(base=1500, per_input_mb=3),
        runtime=job_runtime(),
    conda:
        ENV
    script:
        "../scripts/delta_smear.py"
