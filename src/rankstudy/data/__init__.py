"""Data sets: the registry, downloads, parsing, the embedded generators, folds, cleaning and the split kinds (:mod:`rankstudy.data.kinds`)."""
