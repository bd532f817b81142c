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
    conda:
        ENV
    script:
        "../scripts/paper_table.py"
