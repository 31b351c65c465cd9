"""The runtime embedder on the real built models: API contract, configuration errors, manifest
integrity, batch invariance and edge inputs."""

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from haki.embedding import EMBEDDING_DIM, Embedder, get_embedder
from haki.errors import ConfigurationError
from haki.settings import Settings

SENTENCES = [
    "The user prefers tea over coffee.",
    "L'utilisateur préfère le thé au café.",
    "Deploy the new release on Friday at 18:00, after the freeze.",
    "ok",
    "A much longer passage that goes on about the quarterly planning meeting, the budget, "
    "the hiring plan for the platform team and the risks that the auditors raised last month.",
]


def assert_unit_rows(vectors: np.ndarray) -> None:
    assert vectors.dtype == np.float32
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=-1), 1.0, atol=1e-5)


def test_query_and_passages_have_the_contract_shape(embedder: Embedder) -> None:
    """embed_query → (384,), embed_passages → (n, 384), float32, unit length."""
    assert embedder.dim == EMBEDDING_DIM == 384
    query = embedder.embed_query("Where does the user live?")
    passages = embedder.embed_passages(SENTENCES)
    assert query.shape == (EMBEDDING_DIM,)
    assert passages.shape == (len(SENTENCES), EMBEDDING_DIM)
    assert_unit_rows(query)
    assert_unit_rows(passages)
    assert embedder.embed_passages([]).shape == (0, EMBEDDING_DIM)


def test_prefixes_follow_the_manifest(embedder: Embedder) -> None:
    """A query is the passage embedding of the same text only when both prefixes agree."""
    text = "the user lives in Lyon"
    same = embedder.manifest.query_prefix == embedder.manifest.passage_prefix
    query, passage = embedder.embed_query(text), embedder.embed_passages([text])[0]
    assert np.array_equal(query, passage) == same


def test_related_text_scores_higher(embedder: Embedder) -> None:
    query = embedder.embed_query("What does the user drink in the morning?")
    related, unrelated = embedder.embed_passages(
        ["Every morning the user drinks a cup of green tea.", "The invoice is due next week."]
    )
    assert query @ related > query @ unrelated + 0.05


def test_batch_invariance(embedder: Embedder) -> None:
    """A text embeds the same alone and inside a padded batch with longer texts."""
    alone = np.stack([embedder.embed_passages([s])[0] for s in SENTENCES])
    batched = embedder.embed_passages(SENTENCES)
    reordered = embedder.embed_passages(SENTENCES[::-1])[::-1]
    np.testing.assert_allclose(batched, alone, atol=1e-6, rtol=0)
    np.testing.assert_allclose(reordered, alone, atol=1e-6, rtol=0)


def test_large_batches_keep_input_order(embedder: Embedder) -> None:
    """More texts than one onnxruntime batch (32), of mixed lengths: row i is text i."""
    texts = [f"item {i}: " + "word " * (i % 7) for i in range(70)]
    together = embedder.embed_passages(texts)
    for i in (0, 31, 32, 33, 69):
        np.testing.assert_allclose(together[i], embedder.embed_passages([texts[i]])[0], atol=1e-6)


def test_long_batches_run_in_bounded_runs_with_the_same_vectors(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ten texts that each fill the model's window (one length, so one group) are embedded
    in runs bounded by tokens: the vectors are those of one run of all ten, and of each text
    alone, in order."""
    from haki.embedding import embedder as module

    words = "invoice report export language meeting budget platform auditors".split()
    texts = [f"{i} " + " ".join(words[(i + j) % len(words)] for j in range(700))
             for i in range(10)]
    window = embedder.manifest.max_tokens
    assert set(embedder.passage_tokens(texts)) == {window}
    assert window * len(texts) > module.RUN_TOKENS  # more than one run
    bounded = embedder.embed_passages(texts)
    alone = np.stack([embedder.embed_passages([t])[0] for t in texts])
    monkeypatch.setattr(module, "RUN_TOKENS", 10**9)
    one_run = embedder.embed_passages(texts)
    assert bounded.tobytes() == one_run.tobytes()
    np.testing.assert_array_equal(bounded, alone)
    assert len({row.tobytes() for row in bounded}) == len(texts)


EDGE_INPUTS = {
    "empty": "",
    "whitespace": " \t\n  \r\n ",
    "long_50k": ("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 900)[:50_000],
    "emoji": "🙂🚀🔥 great job 👍🏽👨‍👩‍👧",
    "mixed_scripts": "Réunion jeudi — встреча в четверг — 会议在星期四 — الاجتماع يوم الخميس",
    "nul_bytes": "before\x00after\x00\x00",
    "only_nul": "\x00\x00\x00",
    "lone_surrogate": "broken \ud800 text",
    "control_chars": "\x01\x02\x1b[31mred\x1b[0m\x7f",
}


@pytest.mark.parametrize("name", sorted(EDGE_INPUTS))
def test_edge_inputs_give_finite_unit_vectors(embedder: Embedder, name: str) -> None:
    text = EDGE_INPUTS[name]
    assert_unit_rows(embedder.embed_query(text))
    assert_unit_rows(embedder.embed_passages([text, "a normal sentence"]))


def test_long_input_is_truncated_at_max_tokens(embedder: Embedder) -> None:
    """Text past the provider's token limit does not change the vector."""
    head = "The quick brown fox jumps over the lazy dog. " * 200
    a = embedder.embed_passages([head])[0]
    b = embedder.embed_passages([head + "Completely different ending about taxes."])[0]
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_non_text_is_a_clear_error(e5: Embedder) -> None:
    with pytest.raises(TypeError, match="str"):
        e5.embed_query(42)  # type: ignore[arg-type]  # the wrong type on purpose
    with pytest.raises(TypeError, match="sequence"):
        e5.embed_passages("one string, not a list")


def test_manifest_matches_the_files(embedder: Embedder) -> None:
    """Dimension, provider name and the sha256 of each shipped file."""
    raw = json.loads((embedder.folder / "manifest.json").read_text(encoding="utf-8"))
    assert raw["dimension"] == EMBEDDING_DIM
    assert raw["provider"] == embedder.provider == embedder.folder.name
    assert set(raw["files"]) == {"model.onnx", "tokenizer.json"}
    for name, entry in raw["files"].items():
        data = (embedder.folder / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], name
        assert len(data) == entry["bytes"]
    assert raw["checks"]["onnx_vs_pytorch"]["min_cosine"] >= 0.999
    assert raw["checks"]["onnx_vs_pytorch"]["texts"] >= 50


def test_get_embedder_is_cached_per_configuration(models_dir: Path) -> None:
    one = Settings(embed_provider="minilm-l6", model_dir=models_dir)
    two = Settings(embed_provider="minilm-l6", model_dir=models_dir, embed_threads=2)
    assert get_embedder(one) is get_embedder(one)
    assert get_embedder(two) is not get_embedder(one)
    assert get_embedder(two).threads == 2


def test_get_embedder_names_a_folder_by_its_real_path(models_dir: Path, tmp_path: Path) -> None:
    """Two spellings of one folder (here a symlink) share one embedder, one model in memory."""
    link = tmp_path / "models-link"
    link.symlink_to(models_dir.resolve(), target_is_directory=True)
    direct = get_embedder(Settings(embed_provider="minilm-l6", model_dir=models_dir))
    assert get_embedder(Settings(embed_provider="minilm-l6", model_dir=link)) is direct


def test_unknown_provider_is_a_configuration_error(models_dir: Path) -> None:
    settings = Settings(embed_provider="no-such-model", model_dir=models_dir)
    with pytest.raises(ConfigurationError, match=r"no-such-model.*e5-small-multilingual"):
        get_embedder(settings)


def test_missing_model_dir_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="make model"):
        Embedder("e5-small-multilingual", tmp_path / "nowhere")


def _copy_provider(models_dir: Path, target: Path, provider: str = "minilm-l6") -> Path:
    folder = target / provider
    shutil.copytree(models_dir / provider, folder)
    return folder


def test_wrong_dimension_is_a_configuration_error(models_dir: Path, tmp_path: Path) -> None:
    folder = _copy_provider(models_dir, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["dimension"] = 768
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ConfigurationError, match="dimension 768"):
        Embedder("minilm-l6", tmp_path)


def test_missing_model_file_is_a_configuration_error(models_dir: Path, tmp_path: Path) -> None:
    folder = _copy_provider(models_dir, tmp_path)
    (folder / "model.onnx").unlink()
    with pytest.raises(ConfigurationError, match=r"model\.onnx"):
        Embedder("minilm-l6", tmp_path)


def test_corrupt_model_is_a_configuration_error(models_dir: Path, tmp_path: Path) -> None:
    """The model loads lazily: the error comes with the first embedding."""
    folder = _copy_provider(models_dir, tmp_path)
    (folder / "model.onnx").write_bytes(b"not an onnx model")
    embedder = Embedder("minilm-l6", tmp_path)
    with pytest.raises(ConfigurationError, match="cannot load"):
        embedder.embed_query("hello")


def test_model_masks_padding(embedder: Embedder) -> None:
    """The graph's attention mask keeps padded positions out of a text's vector. The runtime
    never pads (it batches texts of equal token length), but the model contract takes a mask;
    the tolerance is loose because on arm64 padding changes float sums in the last bits."""
    session, tokenizer = embedder._load()
    short, long = (tokenizer.encode(t).ids for t in ("ok", SENTENCES[4]))
    ids = np.full((2, len(long)), embedder.manifest.pad_id, dtype=np.int64)
    mask = np.zeros_like(ids)
    ids[0, : len(short)], mask[0, : len(short)] = short, 1
    ids[1], mask[1] = long, 1
    padded = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    alone = session.run(None, {"input_ids": ids[:1, : len(short)],
                               "attention_mask": mask[:1, : len(short)]})[0]
    np.testing.assert_allclose(padded[0], alone[0], atol=1e-4, rtol=0)
