"""Brute-force reference quantities of the structured criteria (shared by tests/test_structured.py
and tests/test_structsvm_ohsumed.py): the partial-order feature difference and each criterion's
loss of a total order given by its ranks."""

from __future__ import annotations

import numpy as np


def po_difference(s, z, rank):
    """w'(phi_po(y*) - phi_po(y)) for the total order with these ranks."""
    g, b = np.flatnonzero(z), np.flatnonzero(~z)
    swapped = rank[b][None, :] < rank[g][:, None]  # bad before good
    d = (s[g][:, None] - s[b][None, :])[swapped].sum()
    return 2.0 * d / (len(g) * len(b))


def discount(r, k):
    d = 1.0 if r <= 1 else 1.0 / np.log2(1 + r)
    return 0.0 if k is not None and r >= k else d


def ndcg_delta(z, rank, k):
    n_good = z.sum()
    ideal = sum(discount(r, k) for r in range(n_good))
    return 1.0 - sum(discount(r, k) for r in rank[z]) / ideal


def ap_delta(z, rank):
    good_ranks = np.sort(rank[z])
    return 1.0 - np.mean((np.arange(len(good_ranks)) + 1) / (good_ranks + 1))


def decay(r, cut):
    return 0.0 if cut is not None and r >= cut else 1.0 / np.sqrt(1 + r)
