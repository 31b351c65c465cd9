"""The naive baseline of the design page: score *every* active fact of the scope with the full
hybrid score, then pack ("~200 ms at 10,000 facts", sprint 3).

It is given every advantage that does not change its nature: the score is computed in SQL (no
rows shipped to Python for scoring), the per-candidate extras (conflict check, volatility
horizon) only for the ``candidate_limit`` best rows, and everything after retrieval — packing,
multi-hop, episodes, the one-statement trace — is the assembler's own code: the baseline IS
:func:`haki.assembler.assemble`, given a different fact-candidates statement. The only
difference is phase 1: a full scan of the scope instead of two index-backed top-k arms.

The statement reuses the assembler's SQL fragments (scope filters, question terms, scored
columns, score formula); ``tests/integration/test_bench_smoke.py`` checks that both give the
same score to the same fact.
"""

from functools import partial

from haki.assembler import assemble
from haki.assembler.sql import (
    FACT_SCOPE,
    SCORE,
    TEXT_QUERY_CTE,
    score_components,
    scored_fact_columns,
)

#: Every in-scope fact scored (a scan of the scope: no index can order by this score), the best
#: ``candidate_limit`` kept, and only those joined back for the packet's columns and the
#: per-candidate checks (conflicts, volatility) — the same columns and score as the assembler's
#: phase 2.
NAIVE_FACT_CANDIDATES = f"""
WITH {TEXT_QUERY_CTE},
ranked AS MATERIALIZED (
    SELECT components.id
    FROM (
        SELECT f.id, {score_components("t.q")}
        FROM facts AS f
        CROSS JOIN text_query AS t
        WHERE {FACT_SCOPE}
    ) AS components
    ORDER BY {SCORE} DESC, components.id
    LIMIT %(candidate_limit)s
),
scored AS (
    SELECT {scored_fact_columns("t.q")}
    FROM ranked
    JOIN facts AS f USING (id)
    CROSS JOIN text_query AS t
)
SELECT scored.*, {SCORE} AS score
FROM scored
ORDER BY score DESC, id
"""

#: One context call the naive way: ``assemble`` with the full-scan statement.
naive_assemble = partial(assemble, fact_candidates_sql=NAIVE_FACT_CANDIDATES)
