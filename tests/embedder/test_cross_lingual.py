"""Cross-lingual retrieval on hand-written EN/FR translation pairs (tests/data)."""

import numpy as np
import pytest

from haki.embedding import Embedder


def top1_rates(embedder: Embedder, pairs: list[tuple[str, str]]) -> tuple[float, float]:
    """Share of queries whose true translation ranks first, EN→FR and FR→EN.

    Queries go through ``embed_query`` and candidates through ``embed_passages``, as in
    retrieval.
    """
    en, fr = [p[0] for p in pairs], [p[1] for p in pairs]
    truth = np.arange(len(pairs))
    en_q = np.stack([embedder.embed_query(t) for t in en])
    fr_q = np.stack([embedder.embed_query(t) for t in fr])
    en_p, fr_p = embedder.embed_passages(en), embedder.embed_passages(fr)
    en_to_fr = float(np.mean((en_q @ fr_p.T).argmax(axis=1) == truth))
    fr_to_en = float(np.mean((fr_q @ en_p.T).argmax(axis=1) == truth))
    return en_to_fr, fr_to_en


def test_pair_set_is_large_enough(translation_pairs: list[tuple[str, str]]) -> None:
    assert len(translation_pairs) >= 40
    assert len({en for en, _ in translation_pairs}) == len(translation_pairs)


def test_default_provider_finds_the_translation(
    e5: Embedder, translation_pairs: list[tuple[str, str]], record_property: pytest.FixtureRequest
) -> None:
    """multilingual-e5-small ranks the true translation first ≥ 95% of the time, both ways."""
    en_to_fr, fr_to_en = top1_rates(e5, translation_pairs)
    record_property("top1_en_to_fr", en_to_fr)
    record_property("top1_fr_to_en", fr_to_en)
    print(f"e5-small-multilingual top-1: EN→FR {en_to_fr:.1%}, FR→EN {fr_to_en:.1%}")
    assert en_to_fr >= 0.95
    assert fr_to_en >= 0.95


def test_minilm_is_english_only_but_above_chance(
    embedder: Embedder, translation_pairs: list[tuple[str, str]]
) -> None:
    """Reports both providers' figures; MiniLM (English vocabulary) is only required to beat
    chance (1/len) by a wide margin, which tells a broken model from a monolingual one."""
    en_to_fr, fr_to_en = top1_rates(embedder, translation_pairs)
    print(f"{embedder.provider} top-1: EN→FR {en_to_fr:.1%}, FR→EN {fr_to_en:.1%}")
    assert min(en_to_fr, fr_to_en) > 10 / len(translation_pairs)
