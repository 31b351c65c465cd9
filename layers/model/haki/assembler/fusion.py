"""The fused ranking's scores — pure functions, no database.

One candidate list holds facts and episodes. Each arm (vector: cosine over facts and events
merged; text: the BM25 idf of the query terms a row holds, over both pooled) ranks what it
returned; the fused score is a weighted reciprocal-rank fusion of those ranks, so the arms'
incomparable scales (e5 cosines packed in ~[0.7, 0.95], unbounded idf sums) never meet. Then
the best episodes pass a share of their score to their neighbouring turns, which may not have
been candidates at all, the assistant's own messages are weighed down, and each episode
gains a share of the best score of its session (the block's group: its thread and day), so the
turns of the conversation that answers the question rise together.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from uuid import UUID

from haki.assembler.candidates import EpisodeCandidate, FactCandidate, Ranked
from haki.assembler.config import RetrievalConfig
from haki.assembler.render import Group, group_of


@dataclass(frozen=True, slots=True)
class ArmHit:
    """A candidate as the arms returned it: the row and its rank in each arm (1 = best)."""

    item: FactCandidate | EpisodeCandidate
    vector_rank: int | None
    text_arm_rank: int | None


@dataclass(frozen=True, slots=True)
class NeighbourLink:
    """Event ``neighbour_id`` is ``offset`` turns from candidate episode ``source_id``
    (negative: before it). ``episode`` is the neighbour's row when it was not a candidate."""

    source_id: UUID
    offset: int
    neighbour_id: UUID
    episode: EpisodeCandidate | None


def rrf_score(vector_rank: int | None, text_arm_rank: int | None,
              config: RetrievalConfig) -> float:
    """Σ over the arms that returned the row of weight / (rrf_k + rank)."""
    score = 0.0
    if vector_rank is not None:
        score += config.rrf_weight_vector / (config.rrf_k + vector_rank)
    if text_arm_rank is not None:
        score += config.rrf_weight_text / (config.rrf_k + text_arm_rank)
    return score


def weigh_speakers(ranked: Sequence[Ranked], config: RetrievalConfig) -> list[Ranked]:
    """A message the assistant wrote keeps ``assistant_weight`` of its score; the result is
    best first (``ranked`` as it was when no candidate is the assistant's)."""
    weighed = [replace(r, score=r.score * config.assistant_weight)
               if isinstance(r.item, EpisodeCandidate) and r.item.speaker[0] == "assistant"
               else r for r in ranked]
    if all(w is r for w, r in zip(weighed, ranked, strict=True)):
        return list(ranked)
    return _ordered(weighed)


def weigh_sessions(ranked: Sequence[Ranked], config: RetrievalConfig) -> list[Ranked]:
    """Each candidate gains ``session_share`` × the best score of its session, best first:
    an episode's session is its thread's day (its day without a thread), the group the block
    shows it under; a fact is a session of its own. A question is usually answered by one
    conversation, and its best turn vouches for the weaker turns beside it (multi-hop
    questions need several); a fact, or the best turn, keeps its place relative to another.
    A turn the recall floor will exclude vouches for nothing (as it lends no neighbour share)."""
    share = config.session_share
    if not share:
        return list(ranked)
    groups = [group_of(r.item.occurred_at, r.item.thread_id)
              if isinstance(r.item, EpisodeCandidate) else None for r in ranked]
    best: dict[Group, float] = {}
    for r, group in zip(ranked, groups, strict=True):
        if (group is not None and r.score > best.get(group, 0.0)
                and not config.below_floor(r.item.distance)):
            best[group] = r.score
    return _ordered([
        Ranked(r.item, r.vector_rank, r.text_arm_rank,
               r.score + share * (r.score if group is None else best.get(group, r.score)),
               r.expanded_from)
        for r, group in zip(ranked, groups, strict=True)])


def _ordered(ranked: list[Ranked]) -> list[Ranked]:
    """Best first; ties by id, so an order is reproducible."""
    return sorted(ranked, key=lambda r: (-r.score, r.id))


def fuse(hits: Sequence[ArmHit], config: RetrievalConfig) -> list[Ranked]:
    """The candidates with their fused scores, best first."""
    return _ordered([Ranked(h.item, h.vector_rank, h.text_arm_rank,
                            rrf_score(h.vector_rank, h.text_arm_rank, config))
                     for h in hits])


def neighbour_sources(fused: Sequence[Ranked], config: RetrievalConfig) -> list[UUID]:
    """The episodes whose neighbours get a share: the ``neighbour_sources`` best episode
    candidates, leaving out those the recall floor will exclude (an irrelevant turn lends no
    relevance to the turns around it)."""
    return [r.id for r in fused
            if isinstance(r.item, EpisodeCandidate)
            and not config.below_floor(r.item.distance)][:config.neighbour_sources]


def propagate(fused: Sequence[Ranked], links: Sequence[NeighbourLink],
              config: RetrievalConfig) -> list[Ranked]:
    """Each neighbour gets ``neighbour_share`` × its source's fused score / |offset| (the
    largest over its sources, computed from the fused scores before any propagation) on top
    of its own score (0 when it was not a candidate), and records that source. A share flows
    only down the fused order (``fused`` is best first): a source never takes a share from a
    turn it outranks, so two adjacent sources cannot name each other and the recorded
    sources form a forest. The result is the candidates plus the new neighbours, best
    first."""
    base = {r.id: r.score for r in fused}
    order = {r.id: position for position, r in enumerate(fused)}
    bonus: dict[UUID, tuple[float, UUID, EpisodeCandidate | None]] = {}
    for link in links:
        if order.get(link.neighbour_id, len(order)) < order[link.source_id]:
            continue
        share = config.neighbour_share * base[link.source_id] / abs(link.offset)
        if share > bonus.get(link.neighbour_id, (0.0, link.source_id, None))[0]:
            bonus[link.neighbour_id] = (share, link.source_id, link.episode)
    ranked = [replace(r, score=r.score + bonus[r.id][0], expanded_from=bonus[r.id][1])
              if r.id in bonus else r for r in fused]
    ranked.extend(Ranked(episode, None, None, share, expanded_from=source)
                  for neighbour_id, (share, source, episode) in bonus.items()
                  if neighbour_id not in base and episode is not None)
    return _ordered(ranked)
