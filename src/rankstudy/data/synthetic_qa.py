"""The embedded question-answer data set: a synthetic benchmark in five parts, generated
from a seed (no network), for the separate-representation functionals of Tran et al. (2011)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rankstudy.data.blocks import positions
from rankstudy.data.qadata import QAData
from rankstudy.data.rotation import N_PARTS

def _topic_word_distributions(rng: np.random.Generator, vocab_size: int, n_topics: int,
                              common_fraction: float) -> np.ndarray:
    """(n_topics + 1, vocab_size) word distributions: one per topic on its own block of
    words, the last one on topic-free common words (Zipf-like). Columns are shuffled, so a
    word's index says nothing about its topic and the question and answer vocabularies
    (drawn separately) relate only through the shared topics."""
    n_common = max(1, int(round(common_fraction * vocab_size)))
    if vocab_size - n_common < n_topics:
        raise ValueError(f"vocab_size={vocab_size} leaves fewer topical words than n_topics={n_topics}")
    phi = np.zeros((n_topics + 1, vocab_size))
    block_sizes = np.diff(np.linspace(0, vocab_size - n_common, n_topics + 1).astype(int))
    block = np.repeat(np.arange(n_topics), block_sizes)  # topic of each topical word
    topical = n_common + np.arange(len(block))
    phi[block, topical] = rng.dirichlet(np.full(len(block), 0.5))  # one Dirichlet draw, rescaled per topic below
    phi[:n_topics] /= phi[:n_topics].sum(axis=1, keepdims=True)
    phi[n_topics, :n_common] = 1.0 / np.arange(1, n_common + 1)
    phi[n_topics] /= phi[n_topics].sum()
    return phi[:, rng.permutation(vocab_size)]


def _bags_of_words(rng: np.random.Generator, mixtures: np.ndarray, phi: np.ndarray,
                   min_words: int, mean_extra_words: float) -> sp.csr_matrix:
    """Word counts of texts drawn from topic ``mixtures`` (n, n_topics + 1), all at once."""
    p = mixtures @ phi
    p /= p.sum(axis=1, keepdims=True)
    n_words = min_words + rng.poisson(mean_extra_words, len(p))
    return sp.csr_matrix(rng.multinomial(n_words, p).astype(np.float64))


def make_qa_parts(seed: int = 0, n_questions: int = 400, vocab_size: int = 300,
                  answers: tuple[int, int] = (2, 12), *, n_topics: int = 10,
                  common_share: float = 0.3, common_fraction: float = 0.2,
                  focus: float = 0.8, best_share: float = 0.6, weak_share: float = 0.3,
                  weak_fraction: float = 0.4, question_words: tuple[int, float] = (4, 6.0),
                  answer_words: tuple[int, float] = (6, 14.0)) -> list[QAData]:
    """Five disjoint parts of a synthetic question-answer set, one best answer per question.

    Every text is a bag of words from a topic mixture: a share ``common_share`` of its
    words are topic-free common words, the rest come from its topics. A question puts
    ``focus`` of its topical mass on one main topic t (the remainder spread by a flat
    Dirichlet draw over all topics). Its answers (between ``answers[0]`` and ``answers[1]``
    of them, inclusive, the best at a random position):

    * best: ``best_share`` on t and ``focus - best_share`` on another topic;
    * weakly related (a ``weak_fraction`` of the others): ``weak_share`` on t and
      ``focus - weak_share`` on another topic;
    * off-topic: ``focus`` on another topic.

    Questions and answers use different vocabularies of ``vocab_size`` words each
    (with a ``common_fraction`` of common words), linked only through the topics, so a
    ranker must learn the word mapping (e.g. the A, B projections of Tran Eqs. 2-3);
    a random ranking scores about the mean of H_L / L in MRR. ``question_words`` and
    ``answer_words`` are (minimum, mean extra) word counts per text (Poisson extra).
    Deterministic for a given seed.
    """
    low, high = (int(a) for a in answers)
    if n_questions < N_PARTS:
        raise ValueError(f"need at least {N_PARTS} questions, got {n_questions}")
    if not 1 <= low <= high:
        raise ValueError(f"answers must be (min, max) with 1 <= min <= max, got {answers}")
    if n_topics < 2:
        raise ValueError("need at least 2 topics, so that off-topic answers exist")
    if not 0.0 <= weak_share <= best_share <= focus <= 1.0:
        raise ValueError("need 0 <= weak_share <= best_share <= focus <= 1")
    rng = np.random.default_rng(seed)
    phi_question = _topic_word_distributions(rng, vocab_size, n_topics, common_fraction)
    phi_answer = _topic_word_distributions(rng, vocab_size, n_topics, common_fraction)

    lengths = rng.integers(low, high + 1, n_questions)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(offsets[-1])
    question_of_answer = np.repeat(np.arange(n_questions), lengths)
    best_position = rng.integers(0, lengths)  # uniform in 0..length-1 for each question
    is_best = positions(offsets) == best_position[question_of_answer]
    is_weak = ~is_best & (rng.random(n) < weak_fraction)

    main_topic = rng.integers(0, n_topics, n_questions)
    # a different topic for every answer: shift the question's topic by 1..n_topics-1
    other_topic = (main_topic[question_of_answer] + rng.integers(1, n_topics, n)) % n_topics

    def mixtures(count: int, topic_shares: np.ndarray) -> np.ndarray:
        background = (1.0 - focus) * rng.dirichlet(np.ones(n_topics), count)
        topical = topic_shares + background
        return np.hstack([(1.0 - common_share) * topical, np.full((count, 1), common_share)])

    question_topics = np.zeros((n_questions, n_topics))
    question_topics[np.arange(n_questions), main_topic] = focus
    share_of_main = np.where(is_best, best_share, np.where(is_weak, weak_share, 0.0))
    answer_topics = np.zeros((n, n_topics))
    answer_topics[np.arange(n), main_topic[question_of_answer]] += share_of_main
    answer_topics[np.arange(n), other_topic] += focus - share_of_main

    query_vectors = _bags_of_words(rng, mixtures(n_questions, question_topics), phi_question, *question_words)
    object_vectors = _bags_of_words(rng, mixtures(n, answer_topics), phi_answer, *answer_words)

    qid = (1 + np.arange(n_questions, dtype=np.int64))[question_of_answer]
    docid = np.char.add(np.char.add(np.char.add("Q", qid.astype(str)), "-A"), positions(offsets).astype(str))
    full = QAData(query_vectors=query_vectors, object_vectors=object_vectors,
                  y=is_best.astype(np.float64), qid=qid, docid=docid, offsets=offsets)
    part_of_question = np.repeat(np.arange(N_PARTS),
                                 [len(s) for s in np.array_split(np.arange(n_questions), N_PARTS)])
    return [full.select_queries(part_of_question == k) for k in range(N_PARTS)]
