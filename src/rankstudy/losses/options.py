"""What each loss option may be: the constraint lists (:mod:`rankstudy.util.params`) that the
entries of :data:`rankstudy.losses.registry.LOSSES` declare, one list per meaning, shared by every
loss whose option means the same thing (a cutoff ``k``, a ``temperature``, a ``seed``, ...).

The config check reads them for every method before any job, so this module is light: it imports
no loss family (NeuralNDCG's JAX, the numba kernels and SciPy stay out). A choice among names that
a family defines (its weights, phis, criteria, ...) reads them from the family's module when a value
is checked (:func:`names`). Defaults are the loss functions' own, in their signatures, and nowhere
here; what depends on the data (``n_levels`` covering the labels, labels >= 0 for a gain) is checked
by the loss, which sees them.
"""

from __future__ import annotations

from collections.abc import Callable

from rankstudy.util.lazy import load
from rankstudy.util.params import SEED as SEED_PARAM, Boolean, Choice, Integer, Listing, Real


def names(ref: str) -> Callable[[], list[str]]:
    """The names of ``"family.NAME"`` (a tuple, or a dict's keys, in a module of this package),
    read when asked: a :class:`Choice` of them imports the family only to check a value."""
    module, _, name = ref.rpartition(".")
    return lambda: list(load(f"rankstudy.losses.{module}:{name}"))


class DistinctNames(Listing):
    """A non-empty list of distinct names, each one of ``choice``'s (svm_combo's criteria)."""

    def __init__(self, choice: Choice) -> None:
        super().__init__(choice)

    def accepts(self, value) -> bool:
        # a tuple too: the function's own default is one
        return isinstance(value, list | tuple) and len(value) > 0 and len(set(value)) == len(value) \
            and all(self.item.accepts(v) for v in value)

    def describe(self) -> str:
        return f"a non-empty list of distinct names of {', '.join(self.item.options)}"

    def json_schema(self) -> dict:
        return {**super().json_schema(), "minItems": 1, "uniqueItems": True}


# -- meanings shared by several losses ------------------------------------------------------------

SEED = SEED_PARAM.constraints  # the label tie-breaks (or the random CDN topologies, the swap sampler's walks)
BLOCK_ELEMENTS = [Integer(1)]  # entries of one block of pairs (or matrices, or samples) in memory
N_LEVELS = [None, Integer(1)]  # |L|, labels 0..|L|-1; None: the largest label + 1
REL_THRESHOLD = [Real()]  # a document is good (relevant) when its label is >= this
TEMPERATURE = [Real(0, low_open=True)]  # of the sigmoids that smooth a rank
TOP_K = [None, Integer(1)]  # the top k ranks of an NDCG@k; None: the whole list
CUTOFF = [Integer(1)]  # the k of a metric@k a loss needs one for (structured, conditional)
ANY_NUMBER = [Real()]  # a weight or scale the loss takes as it is (lambdaloss's mu, poly1's epsilon)

# -- one family's options -------------------------------------------------------------------------

# Tran et al.'s element-wise weights W_i
ELEMENT_WEIGHTED = {"weight": [Choice(names("elementwise.ELEMENT_WEIGHTS"), "weight")], "n_levels": N_LEVELS,
                    "seed": SEED}
# Tran et al.'s pairwise losses: phi, the weights V_ij, and WUB's rating-free weights and MRF scale
PHI = [Choice(names("pairwise.PHIS"), "phi")]
PAIR_WEIGHT = [Choice(names("pairwise.PAIR_WEIGHTS"), "weight")]
WUB_WEIGHT = [Choice(names("pairwise.WUB_WEIGHTS"), "rating-free WUB weight")]  # Tran et al., Table 9's note
WUB_GAMMA = [Real(0, low_open=True), Choice(("inv_pairs",), "gamma")]  # or 2 / (N_q (N_q - 1)) per query

# the structural SVMs (Chakrabarti et al.): the latent target, DORM's cut, SVMcombo's criteria
LATENT = [Boolean()]
CUT = [None, Integer(1)]  # DORM's decay is 0 from this rank on; None: no cut
CRITERIA = [DistinctNames(Choice(names("structured.CRITERIA"), "criterion"))]
SLACKS = [Choice(names("structured.SLACKS"), "slacks")]

# the CDN (Huang and Frey)
CDN = {"topology": [Choice(names("cdn.TOPOLOGIES"), "topology")], "w1": [Real(0)], "w2": [Real(0)],
       "degree": [Integer(1)], "n_topologies": [Integer(1)], "seed": SEED,
       "reduction": [Choice(names("cdn.REDUCTIONS"), "reduction")],
       "backend": [Choice(names("cdn.BACKENDS"), "backend")], "block_elements": BLOCK_ELEMENTS}

# the conditional models (Dubey et al.): phi_po's normalisation, the swap sampler, the gain
NORMALIZE = [Boolean()]
SAMPLED = {"rel_threshold": REL_THRESHOLD, "normalize": NORMALIZE, "sample_size": [Integer(1)],
           "walk_length": [Integer(0)], "restart_states": [Integer(2)], "restart_skew": [Real()], "seed": SEED,
           "restart_spread": [Choice(names("swap_sampler.SPREADS"), "restart_spread")]}
GAINED = {"gain": [Choice(names("conditional.GAINS"), "gain")], "k": CUTOFF, **SAMPLED}

# the listwise losses after Rax and allRank, and LambdaLoss
GAIN = [Choice(names("listwise.GAINS"), "gain")]
NEURAL_NDCG = {"temperature": TEMPERATURE, "k": TOP_K, "transposed": [Boolean()], "sinkhorn_iterations": [Integer(0)],
               "gain": GAIN, "block_elements": BLOCK_ELEMENTS}
WEIGHTING = [Choice(names("lambdaloss.WEIGHTINGS"), "weighting")]
