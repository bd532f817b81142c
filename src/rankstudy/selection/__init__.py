"""Model selection above the rankers, as scikit-learn's ``model_selection``: a method's spec
becomes rankers (:mod:`.spec`), a grid's candidates are fitted and the best on the validation
split kept (:mod:`.search`), or Optuna tunes them (:mod:`.tuning`, its pruners :mod:`.pruning`,
its study's storage :mod:`.tuning_storage`)."""
