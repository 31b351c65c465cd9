"""What the rollups and the series count of the calls' feedback: one row per call with
feedback, its used and missing items counted once whatever the sources (the union of theirs).

The figures of a bucket (:class:`FeedbackTotals`) add up across rows, and derive the series'
quality measures: the share of the served items (facts and episodes) of the calls with feedback
that the answers used, and the tokens those calls served per used item.
"""

from dataclasses import dataclass

#: The feedback of the calls ``calls`` (a CTE with ``trace_id`` and ``created_at``), one row
#: per call: distinct used and missing ids over its sources (call_feedback primary key).
FEEDBACK_PER_CALL = """
SELECT f.trace_id, f.call_created_at,
       count(DISTINCT u.id) FILTER (WHERE u.list = 'used') AS used,
       count(DISTINCT u.id) FILTER (WHERE u.list = 'missing') AS missing
FROM call_feedback AS f
JOIN calls AS c ON c.trace_id = f.trace_id AND c.created_at = f.call_created_at
               AND c.project_id = f.project_id
LEFT JOIN LATERAL (SELECT 'used' AS list, x AS id FROM unnest(f.used) AS x
                   UNION ALL
                   SELECT 'missing', x FROM unnest(f.missing) AS x) AS u ON true
GROUP BY f.trace_id, f.call_created_at
"""

#: Per group of calls ``c`` left-joined with ``fb`` (:data:`FEEDBACK_PER_CALL`): the columns
#: of :class:`FeedbackTotals`, in its field order.
FEEDBACK_SUMS = """
(count(fb.trace_id))::int,
(coalesce(sum(c.facts_served + c.episodes_served) FILTER (WHERE fb.trace_id IS NOT NULL),
          0))::int,
(coalesce(sum(fb.used), 0))::int,
(coalesce(sum(c.token_count) FILTER (WHERE fb.trace_id IS NOT NULL), 0))::bigint,
(count(*) FILTER (WHERE fb.missing > 0))::int,
(coalesce(sum(fb.missing), 0))::int
"""

#: The rollup columns that hold :class:`FeedbackTotals`, in its field order.
FEEDBACK_COLUMNS = ("calls_with_feedback", "items_served_with_feedback", "items_used",
                    "tokens_with_feedback", "calls_with_missing", "items_missing")


@dataclass
class FeedbackTotals:
    """The feedback of a set of calls."""

    #: Calls with any feedback.
    calls_with_feedback: int = 0
    #: Facts and episodes those calls served.
    items_served_with_feedback: int = 0
    #: Of those, the ones the answers used.
    items_used: int = 0
    #: Tokens those calls served.
    tokens_with_feedback: int = 0
    #: Calls whose feedback names memory that should have been served.
    calls_with_missing: int = 0
    items_missing: int = 0

    def add(self, values: "tuple[int, ...] | list[int]") -> None:
        """Add one row's figures (in :data:`FEEDBACK_COLUMNS` order)."""
        for name, value in zip(FEEDBACK_COLUMNS, values, strict=True):
            setattr(self, name, getattr(self, name) + int(value))

    def values(self) -> tuple[int, ...]:
        return tuple(getattr(self, name) for name in FEEDBACK_COLUMNS)

    @property
    def used_share(self) -> float | None:
        """Share of the served items of the calls with feedback that the answers used."""
        if not self.items_served_with_feedback:
            return None
        return self.items_used / self.items_served_with_feedback

    @property
    def tokens_per_used_item(self) -> float | None:
        """Tokens the calls with feedback served, per item their answers used."""
        return self.tokens_with_feedback / self.items_used if self.items_used else None
