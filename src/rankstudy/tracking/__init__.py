"""MLflow bookkeeping of the pipeline's runs, and their provenance."""
