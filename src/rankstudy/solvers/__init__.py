"""Training: the objective a scorer and a loss make on one split, and the solvers that
minimise it (see :mod:`rankstudy.solvers.base`)."""
