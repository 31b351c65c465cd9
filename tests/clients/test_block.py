"""The ``<haki_memory>`` block the service returns (``render: true``): memory cannot close the
block, open a forged one or add lines of its own, whatever it holds — on the live service, over
HTTP, for memory loaded to break out of it, and on hostile packets given to the renderer the
service runs (``haki.assembler.render``)."""

import re
import sys
import unicodedata

from haki.assembler.render import inline, render_packet
from haki.models import ContextPacket
from haki_local.demo import DEMO_PROJECT
from tests.clients.hostile import HOSTILE_QUERY, HOSTILE_SUBJECT, packets
from tests.e2e.conftest import Client, Server


def assert_sealed(block: str, facts: int, episodes: int) -> None:
    """The block's own two tags and nothing else that could be read as a tag; one line per
    fact and per episode, each starting with its handle, and group headers."""
    for form in ("NFKC", "NFKD"):  # what a tokenizer or a reader may normalise it to
        normal = unicodedata.normalize(form, block)
        assert normal.count("<") == 2 and normal.count(">") == 2, (form, block)
    assert not any(unicodedata.category(c) == "Cf" or "\x80" <= c <= "\x9f" for c in block)
    lines = block.split("\n")
    assert lines[0] == "<haki_memory>" and lines[-1] == "</haki_memory>", block
    assert block.count("<") == 2 and block.count(">") == 2, block
    body = lines[1:-1]
    handles = [f"[f{i}] " for i in range(1, facts + 1)] + \
        [f"[e{j}] " for j in range(1, episodes + 1)]
    assert [line[:len(line.split(" ")[0]) + 1] for line in body
            if not re.match(r"## \d{4}-\d{2}-\d{2}(?: · .*)?$", line)] == handles, block
    if episodes:
        assert body[facts].startswith("## "), block  # the first episode's group header


def test_live_hostile_memory_cannot_close_or_forge_the_served_block(haki_server: Server):
    answer = Client(haki_server.url).request(
        "POST", "/v1/context", key=haki_server.key, body={
            "project_id": DEMO_PROJECT, "subject_id": HOSTILE_SUBJECT, "query": HOSTILE_QUERY,
            "purpose": "test", "budget_tokens": 4000, "render": True})
    assert answer.status == 200
    packet = answer.json["packet"]
    assert len(packet["facts"]) >= 5 and packet["episodes"]
    block = answer.json["block"]
    assert_sealed(block, len(packet["facts"]), len(packet["episodes"]))
    # The forged tags are still there to read, as look-alikes that no parser takes for tags.
    assert "‹/haki_memory›" in block and "‹haki_memory›" in block


def test_hostile_packets_cannot_close_or_forge_the_block():
    sealed = 0
    for text in packets():
        packet = ContextPacket.model_validate_json(text)
        block = render_packet(packet)
        if not packet.facts and not packet.episodes:
            assert block == ""
            continue
        assert_sealed(block, len(packet.facts), len(packet.episodes))
        sealed += 1
    assert sealed > 300


def test_every_format_and_c1_character_is_dropped_and_every_bracket_look_alike_folded():
    """Exhaustively, over every code point of this Python's Unicode: format characters (Cf)
    and C1 controls vanish, and nothing of a memory text normalises to an angle bracket."""
    every = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    assert [c for c in every
            if (unicodedata.category(c) == "Cf" or "\x80" <= c <= "\x9f")
            and inline(c) not in ("", " ")] == []  # NEL (U+0085) is a line break: a space
    assert [c for c in every
            if {"<", ">"} & set(unicodedata.normalize("NFKD", inline(c)))] == []
    assert inline("＜/haki_memory＞ ﹤x﹥") == "‹/haki_memory› ‹x›"
