"""Budget packing and the decision of every candidate — pure Python, no database.

The packer walks the candidates in the order the ranking prescribes (one list of facts and
episodes by fused score), takes one decision per candidate, and keeps the packet and the token
count that result. Every candidate it is shown gets exactly one decision, so the trace explains
every row considered.

The budget bounds the rendered ``<haki_memory>`` block (``render.py``), whether or not the
caller asks for it: the packer keeps the length of the block its packet renders to, tags,
headers and line breaks included, and a candidate goes in only if the block's estimate
(``max(1, len // 4)``) stays within the budget with its line. A decision's ``tokens`` is what
its line adds to that estimate (the first item packed also carries the two tags, the first
episode of a group its header), so the included decisions' tokens add up to the call's
``token_count``, the block's estimate.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import TypedDict
from uuid import UUID

from haki.assembler.candidates import EpisodeCandidate, FactCandidate, Ranked
from haki.assembler.render import (
    TAGS_CHARS,
    Group,
    episode_line,
    fact_line,
    group_header,
    group_of,
)
from haki.models import (
    ContextPacket,
    EmptyReason,
    PacketEpisode,
    PacketFact,
    TraceAction,
    TraceDecision,
)
from haki.text import tokens_of_length

#: Where an episode stands in the order things were said: its time, then its place in the
#: order events were written.
Said = tuple[datetime, int]

#: Volatility classes dropped once their horizon has passed; ``slow`` is served, flagged.
EXPIRING = frozenset({"volatile", "ephemeral"})

#: The trace fields of a fused candidate (``TraceDecision``): each arm's rank and the source
#: of its neighbour share.
class ArmRanks(TypedDict):
    vector_rank: int | None
    text_arm_rank: int | None
    expanded_from: UUID | None


def _arm_ranks(ranked: Ranked) -> ArmRanks:
    return ArmRanks(vector_rank=ranked.vector_rank, text_arm_rank=ranked.text_arm_rank,
                    expanded_from=ranked.expanded_from)


@dataclass
class Packer:
    """Greedy packing of the block under ``budget`` tokens.

    Candidates go in by descending score while the block fits; one whose line does not fit is
    excluded ``over_budget`` and the packer goes on with the next (a shorter one further down
    may still fit). ``max_distance`` > 0 turns the recall floor on for ranked facts and episodes;
    expansion rows (neighbour-only episodes) are never gated by it. ``excerpt_with_kind``: an
    episode's excerpt is ``kind: text`` or its text alone, cut at ``excerpt_chars``.
    """

    budget: int
    max_distance: float = 0.0
    excerpt_chars: int = 300
    excerpt_with_kind: bool = False
    remaining: int = field(init=False)
    #: The subject is disabled (``POST /v1/forget``): nothing of it was a candidate.
    subject_disabled: bool = False
    decisions: list[TraceDecision] = field(default_factory=list, init=False)
    facts: list[PacketFact] = field(default_factory=list, init=False)
    #: The included episodes in decision order, each with where it stands in the order said
    #: and its group (the packet shows them in reading order, :meth:`reading_order`).
    episodes: list[tuple[Said, Group, PacketEpisode]] = field(default_factory=list, init=False)
    #: The length of the block the packet renders to (0: empty, no block), and the episode
    #: groups it has a header for.
    chars: int = field(default=0, init=False)
    groups: set[Group] = field(default_factory=set, init=False)
    blocked_conflicts: int = field(default=0, init=False)
    expired: int = field(default=0, init=False)
    below_floor: int = field(default=0, init=False)
    def __post_init__(self) -> None:
        self.remaining = self.budget

    @property
    def tokens_used(self) -> int:
        """The block's estimate (0 for the empty block)."""
        return block_tokens(self.chars)

    def add_fused(self, candidates: list[Ranked]) -> None:
        """Fused: facts and episodes in one list, best first. An episode that no arm returned
        came in as a neighbour: ``neighbour_expansion``, not gated by the floor."""
        for rank, ranked in enumerate(candidates, start=1):
            if isinstance(ranked.item, FactCandidate):
                self._decide_fact(ranked.item, rank, ranked)
            else:
                self._decide_episode(ranked.item, rank, ranked)

    def packet(self, *, missing_purpose: bool) -> ContextPacket:
        warnings: list[str] = []
        if self.subject_disabled:
            warnings.append(
                "subject_disabled: this subject is disabled (POST /v1/forget); nothing of it "
                "is served until one of its facts is brought back to active")
        if self.blocked_conflicts:
            warnings.append(
                f"open_conflict: {self.blocked_conflicts} fact(s) hidden pending conflict "
                "resolution")
        if self.expired:
            warnings.append(
                f"volatility_expired: {self.expired} fact(s) past their volatility horizon "
                "were not served")
        if missing_purpose:
            warnings.append("missing_purpose: no purpose was given for this context request")
        return ContextPacket(
            facts=self.facts,
            episodes=self.reading_order(),
            warnings=warnings,
            status="degraded" if warnings else "ok",
            empty_reason=self._empty_reason(),
        )

    def _empty_reason(self) -> EmptyReason | None:
        if self.facts or self.episodes:
            return None
        if not self.decisions:
            return "no_memory"
        if self.below_floor:
            return "no_relevant_memory"
        return "all_filtered"

    def reading_order(self) -> list[PacketEpisode]:
        """The included episodes as the block shows them: by group (day, then the group's
        first word), each group's episodes in the order they were said."""
        first: dict[Group, Said] = {}
        for said, group, _ in self.episodes:
            first[group] = min(first.get(group, said), said)

        def place(entry: tuple[Said, Group, PacketEpisode]) -> tuple[object, ...]:
            said, group, _ = entry
            day, thread = group
            return day, first[group], thread or "", said

        return [episode for _, _, episode in sorted(self.episodes, key=place)]

    def _cost(self, line: str, group: Group | None = None) -> tuple[int, int]:
        """The characters ``line`` adds to the block (its line break, the tags when the block
        is empty, the header of a new ``group``), and the tokens they add to its estimate."""
        added = len(line) + 1 + (TAGS_CHARS if self.chars == 0 else 0)
        if group is not None and group not in self.groups:
            added += len(group_header(group)) + 1
        return added, block_tokens(self.chars + added) - self.tokens_used

    def _admit(self, cost: tuple[int, int], distance: float, gated: bool,
               included_reason: str) -> tuple[TraceAction, str]:
        """The recall floor (when ``gated``), then the budget; an admitted candidate's
        characters are added to the block."""
        if gated and 0 < self.max_distance < distance:
            self.below_floor += 1
            return "excluded", "below_relevance_floor"
        added, tokens = cost
        if tokens > self.remaining:
            return "excluded", "over_budget"
        self.chars += added
        self.remaining -= tokens
        return "included", included_reason

    def _decide_episode(self, episode: EpisodeCandidate, rank: int, ranked: Ranked) -> None:
        excerpt = episode.text(with_kind=self.excerpt_with_kind)[:self.excerpt_chars]
        role, name = episode.speaker
        group = group_of(episode.occurred_at, episode.thread_id)
        cost = self._cost(episode_line(len(self.episodes) + 1, role, name, excerpt), group)
        tokens = cost[1]
        included_reason = ("neighbour_expansion" if ranked.neighbour_only
                           else "episode_match")
        action, reason = self._admit(cost, episode.distance, not ranked.neighbour_only,
                                     included_reason)
        if action == "included":
            self.groups.add(group)
            self.episodes.append(((episode.occurred_at, episode.seq), group, PacketEpisode(
                event_id=episode.id, kind=episode.kind, occurred_at=episode.occurred_at,
                excerpt=excerpt, role=role, name=name, thread_id=episode.thread_id)))
        self.decisions.append(TraceDecision(
            ordinal=len(self.decisions),
            fact_id=None, event_id=episode.id, action=action, reason_code=reason,
            rank=rank, score=ranked.score, similarity=episode.similarity,
            text_rank=None, tokens=tokens, **_arm_ranks(ranked)))

    def _decide_fact(self, candidate: FactCandidate, rank: int, ranked: Ranked) -> None:
        if candidate.conflict_open:
            # Never scored, never packed: the trace says it was there and why it was hidden.
            self.blocked_conflicts += 1
            self.decisions.append(TraceDecision(
                ordinal=len(self.decisions),
                fact_id=candidate.id, event_id=None, action="blocked",
                reason_code="conflict_open", rank=rank, score=None, similarity=None,
                text_rank=None, tokens=None, **_arm_ranks(ranked)))
            return
        unconfirmed = candidate.horizon_passed and candidate.volatility == "slow"
        cost = self._cost(fact_line(len(self.facts) + 1, candidate.predicate, candidate.value,
                                    candidate.valid_from, unconfirmed))
        tokens = cost[1]
        action: TraceAction
        if candidate.horizon_passed and candidate.volatility in EXPIRING:
            self.expired += 1
            action, reason = "excluded", "volatility_expired"
        else:
            action, reason = self._admit(cost, candidate.distance, True, "top_score")
        if action == "included":
            self.facts.append(PacketFact(
                id=candidate.id, predicate=candidate.predicate, value=candidate.value,
                confidence=candidate.confidence, valid_from=candidate.valid_from,
                source_event_ids=candidate.source_event_ids, unconfirmed=unconfirmed))
        self.decisions.append(TraceDecision(
            ordinal=len(self.decisions),
            fact_id=candidate.id, event_id=None, action=action, reason_code=reason,
            rank=rank, score=ranked.score, similarity=candidate.similarity,
            text_rank=candidate.text_rank, tokens=tokens,
            unconfirmed=unconfirmed and action == "included", **_arm_ranks(ranked)))


def block_tokens(chars: int) -> int:
    """The estimate of a block of ``chars`` characters; 0 for no block at all."""
    return tokens_of_length(chars) if chars else 0
