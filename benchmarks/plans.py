"""What a benchmark run measures: data sets, scenarios and how many calls each gets."""

from dataclasses import dataclass

from benchmarks.synthetic import DatasetSpec, ScopeSpec, many_scopes, single_scope

HARD_SUBJECT = "customer-hard"


@dataclass(frozen=True)
class Scenario:
    name: str
    dataset: DatasetSpec
    #: Which scopes the questions target: ``all`` (the single scope), ``regular`` (every scope
    #: but the hard one) or ``hard`` (the large subject).
    target: str
    queries: int
    naive_queries: int
    recall_queries: int
    #: Scenarios of one scope form the 10k → 1M slope.
    single_scope: bool = False
    #: Untimed calls with questions of their own (not the timed ones) before the timed loops:
    #: the bench server starts with empty shared buffers, and a large graph's pages come in
    #: from the OS cache one 8 kB read at a time on first touch; a memory service's database
    #: runs for months. The timed questions are never among them, so none is measured on
    #: pages it brought in itself.
    warmup_queries: int = 0

    def target_scopes(self) -> list[ScopeSpec]:
        scopes = list(self.dataset.scopes)
        if self.target == "hard":
            return [s for s in scopes if s.subject_id == HARD_SUBJECT]
        if self.target == "regular":
            return [s for s in scopes if s.subject_id != HARD_SUBJECT]
        return scopes

    @property
    def scope_facts(self) -> int:
        """Facts (all statuses) in one targeted scope."""
        return self.target_scopes()[0].facts


@dataclass(frozen=True)
class Plan:
    mode: str
    scenarios: tuple[Scenario, ...]
    #: Untimed calls before each timed loop (caches, connection).
    warmup: int
    #: Calls shared by the concurrent clients (at most the scenario's questions).
    throughput_calls: int
    clients: int = 2


SINGLE_10K = single_scope("single_10k", 10_000)
SINGLE_100K = single_scope("single_100k", 100_000)
SINGLE_1M = single_scope("single_1m", 1_000_000)
#: 1,000 subjects of 950 facts and one subject of 50,000 (5% of the 1,000,000-row table).
MULTI_1M = many_scopes("multi_1m", scopes=1_000, facts_per_scope=950, hard_facts=50_000)


def _one_scope(name: str, spec: DatasetSpec, queries: int, naive: int, recall: int,
               warmup_queries: int = 0) -> Scenario:
    return Scenario(name, spec, "all", queries, naive, recall, single_scope=True,
                    warmup_queries=warmup_queries)


#: The one-scope data sets of the 10k → 1M slope, by the size their scenarios are named after.
_SLOPE = {"10k": SINGLE_10K, "100k": SINGLE_100K, "1M": SINGLE_1M}


def _slope(queries: int, recall: int, naive_and_warmup: dict[str, tuple[int, int]]
           ) -> tuple[Scenario, ...]:
    """The one-scope scenarios of the sizes named, each with its ``(naive_queries,
    warmup_queries)``."""
    return tuple(
        _one_scope(f"{size} facts, one scope", _SLOPE[size], queries, naive, recall,
                   warmup_queries=warmup)
        for size, (naive, warmup) in naive_and_warmup.items())


QUICK = Plan(
    mode="quick",
    scenarios=_slope(60, 20, {"10k": (20, 20), "100k": (10, 40)}),
    warmup=5,
    throughput_calls=40,
)

FULL = Plan(
    mode="full",
    scenarios=(
        *_slope(300, 100, {"10k": (60, 50), "100k": (40, 100)}),
        Scenario("1M facts over 1,000 scopes", MULTI_1M, "regular", 300, 60, 100,
                 warmup_queries=100),
        Scenario("hard: one subject with 5% of 1M", MULTI_1M, "hard", 300, 30, 100,
                 warmup_queries=100),
        # Last, with fewer calls: one call costs seconds (naive) and the exact scan ~1 s.
        *_slope(60, 20, {"1M": (6, 150)}),
    ),
    warmup=10,
    throughput_calls=200,
)

#: Seconds-long run for the test suite: the harness end to end on tiny data.
SMOKE = Plan(
    mode="smoke",
    scenarios=(
        _one_scope("2k facts, one scope", single_scope("smoke_2k", 2_000), 6, 3, 3,
                   warmup_queries=2),
        Scenario("2k facts over 20 scopes", many_scopes(
            "smoke_multi", scopes=20, facts_per_scope=90, hard_facts=200), "regular", 6, 3, 3),
    ),
    warmup=1,
    throughput_calls=6,
)
