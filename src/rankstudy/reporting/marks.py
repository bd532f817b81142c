"""The marks the tables put beside a system or a number, in one place: the tables, the papers'
layouts and the leaderboard write them, and the end-of-run summary (in Snakemake's own process,
which must not import the tables' statistics to read two characters) looks for them."""

# after a system whose chosen model did not learn in some fold (rankstudy.evaluation.learning)
NOT_LEARNED_MARK = "⚠"
# after a system whose test scores were all tied in most queries of some fold (learning.score_ties)
TIED_MARK = "≡"
FEW_QUERIES_MARK = "§"  # instead of significance marks, where the test queries are too few
BETTER_MARK, WORSE_MARK = "▲", "▼"
