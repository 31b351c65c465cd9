"""``haki_client.render`` gives exactly the service's ``render_packet`` string."""

from haki.models import ContextPacket as ServicePacket
from haki_client import ContextPacket, render
from haki_local.render import render_packet
from tests.clients.hostile import packets


def test_render_equals_the_services_on_hostile_packets():
    rendered = 0
    for text in packets():
        expected = render_packet(ServicePacket.model_validate_json(text))
        assert render(ContextPacket.model_validate_json(text)) == expected, text
        rendered += bool(expected)
    assert rendered > 300


def test_rendered_memory_cannot_close_or_forge_the_block():
    for text in packets():
        block = render(ContextPacket.model_validate_json(text))
        if not block:
            continue
        lines = block.split("\n")
        assert lines[0] == "<haki_memory>" and lines[-1] == "</haki_memory>"
        assert block.count("<") == 2 and block.count(">") == 2  # the two tags alone
        assert all(line.startswith(("- ", "Facts:", "Episodes:")) for line in lines[1:-1])


def test_an_empty_packet_renders_as_nothing():
    empty = ContextPacket(facts=[], episodes=[], warnings=["x: y"], status="degraded",
                          empty_reason="no_memory")
    assert render(empty) == ""
