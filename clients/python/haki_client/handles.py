"""Handles: the short names the ``<haki_memory>`` block gives its lines, so that a model can
cite what it used (``[f2]``, ``[e5]``) and the agent can report it as feedback.

The rule, the service's: the i-th fact of ``packet.facts`` is ``f{i}``, the j-th episode of
``packet.episodes`` is ``e{j}``, both 1-based in packet order. A handle therefore names an item
of one packet only: map it with the packet it came from (the answer of ``context``, or the
``packet`` of ``inspect`` for that trace).
"""

import re
from collections.abc import Iterable
from uuid import UUID

from haki_client.models import ContextPacket

#: A handle as the block writes it, or bare: ``[f2]``, ``f2``, ``[e5]``.
_HANDLE = re.compile(r"\[?([fe])([1-9][0-9]*)\]?")
#: Handles cited in free text, bracketed only (a bare ``e5`` in prose is no citation).
_CITED = re.compile(r"\[([fe])([1-9][0-9]*)\]")


def handles(packet: ContextPacket) -> dict[str, UUID]:
    """Every handle of ``packet`` and the fact or event id it names, in packet order."""
    named = {f"f{i}": fact.id for i, fact in enumerate(packet.facts, start=1)}
    named.update({f"e{j}": episode.event_id
                  for j, episode in enumerate(packet.episodes, start=1)})
    return named


def cited_ids(text: str, packet: ContextPacket) -> list[UUID]:
    """The ids of the items ``text`` (a model's answer) cites as ``[f2]`` / ``[e5]``, each
    once, in the order first cited. A handle the packet does not have is ignored: the text is
    the model's, and a made-up citation names nothing."""
    named = handles(packet)
    cited = (named.get(f"{kind}{number}") for kind, number in _CITED.findall(text))
    return list(dict.fromkeys(i for i in cited if i is not None))


def resolve_refs(refs: Iterable[str | UUID], packet: ContextPacket | None) -> list[UUID]:
    """Handles (``f2``, ``[e5]``) and ids, as ids, each once, in order. A handle needs the
    ``packet`` it came from; one the packet does not have, or text that is neither a handle
    nor an id, raises ``ValueError`` naming each."""
    named = handles(packet) if packet is not None else {}
    ids: list[UUID] = []
    unknown: list[str] = []
    for ref in refs:
        if isinstance(ref, UUID):
            ids.append(ref)
            continue
        handle = _HANDLE.fullmatch(ref.strip())
        if handle:
            found = named.get(handle.group(1) + handle.group(2))
            if found is None:
                unknown.append(ref)
            else:
                ids.append(found)
            continue
        try:
            ids.append(UUID(ref))
        except ValueError:
            unknown.append(ref)
    if unknown:
        raise ValueError(f"not a handle of this packet nor an id: {', '.join(unknown)}")
    return list(dict.fromkeys(ids))


def has_handles(refs: Iterable[str | UUID]) -> bool:
    """Whether any of ``refs`` is a handle (and so needs the call's packet to resolve)."""
    return any(isinstance(r, str) and _HANDLE.fullmatch(r.strip()) for r in refs)
