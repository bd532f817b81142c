"""Ranking losses as small pure functions of padded scores, labels and a mask.

Every loss has the signature ``loss(scores, labels, mask, **options) -> (value, grad)``:

* ``scores``, ``labels``: float ``(Q, L)`` arrays, one row per query, padded
  (see :func:`rankstudy.data.blocks.pad`); ``mask`` is the bool ``(Q, L)`` array of
  real entries. Padded entries never affect the value and get zero gradient,
  whatever they hold (even NaN/inf).
* ``value``: a Python float, the MEAN over the queries that have at least one
  loss term (what counts as a term is in each docstring); queries without
  terms are ignored, so e.g. an all-equal-label query cannot dilute a pairwise
  loss. No terms at all gives ``(0.0, zeros)``.
* ``grad``: the analytic d value / d scores, same shape as ``scores``.

All queries are processed at once on the padded arrays; pairwise losses build
``(Qc, Lc, Lc)`` blocks over chunks of queries with a bounded number of
elements (:func:`rankstudy.losses.padded.pair_blocks`), so memory stays bounded
even with 1,000-document queries. RankSVM's squared hinge needs no pair blocks: it is summed in
one sort and two sweeps per query, or over the pairs of a short query
(:mod:`rankstudy.losses.squared_hinge_numba`).

Families, one module each: :mod:`~rankstudy.losses.baseline` (pointwise, RMSE, RankNet, RankSVM,
ListNet, ListMLE), :mod:`~rankstudy.losses.elementwise`, :mod:`~rankstudy.losses.pairwise` and
:mod:`~rankstudy.losses.smoothed` (Tran et al. 2011), :mod:`~rankstudy.losses.listwise` (softmax,
poly1, ApproxNDCG, NeuralNDCG) and :mod:`~rankstudy.losses.lambdaloss`; :mod:`~rankstudy.losses.groups` applies
any of them to label-tie groups. Shared helpers are in :mod:`~rankstudy.losses.padded`.
Every loss is found by name in :mod:`rankstudy.losses.registry`; adding one is one function in
its family's module plus one entry there, which declares what each of its options may be
(:mod:`rankstudy.losses.options`).
"""
