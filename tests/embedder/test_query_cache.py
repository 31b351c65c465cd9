"""The per-embedder LRU cache of query vectors: normalisation, hits, eviction, disabled mode,
read-only results, thread safety, and that a cached vector is the one the model computes."""

import threading
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from haki.embedding import CacheStats, Embedder, QueryCache, normalize_query

PROVIDER = "e5-small-multilingual"
QUESTION = "Where does the user live these days?"


@pytest.fixture
def cached(models_dir: Path) -> Embedder:
    return Embedder(PROVIDER, models_dir, query_cache_size=3)


@pytest.fixture(scope="module")
def uncached(models_dir: Path) -> Embedder:
    return Embedder(PROVIDER, models_dir, query_cache_size=0)


def test_normalisation_collapses_whitespace_and_composes_unicode() -> None:
    messy = "  Where   does\tthe user\n\nlive?\u00a0 "
    assert normalize_query(messy) == "Where does the user live?"
    decomposed = unicodedata.normalize("NFD", "Qu'a dit l'utilisateur à Noël ?")
    assert normalize_query(decomposed) == "Qu'a dit l'utilisateur à Noël ?"
    assert normalize_query("Where does the USER live?") == "Where does the USER live?"  # cased
    assert normalize_query("broken \ud800 text") == "broken ? text"  # as _clean does
    assert normalize_query("") == normalize_query(" \n\t ") == ""
    with pytest.raises(TypeError, match="str"):
        normalize_query(42)  # type: ignore[arg-type]  # the wrong type on purpose


def test_repeated_query_is_a_hit_with_the_same_vector(cached: Embedder) -> None:
    first = cached.embed_query(QUESTION)
    second = cached.embed_query(QUESTION)
    assert second is first
    assert cached.cache_stats() == CacheStats(capacity=3, size=1, hits=1, misses=1, evictions=0)
    assert cached.cache_stats().hit_rate == 0.5


def test_cached_vector_is_the_models_vector(cached: Embedder, uncached: Embedder) -> None:
    """A hit returns bit for bit what the model computes for the normalised text."""
    cached.embed_query(QUESTION)
    hit = cached.embed_query(QUESTION)
    assert cached.cache_stats().hits == 1
    assert hit.tobytes() == uncached.embed_query(QUESTION).tobytes()
    assert hit.dtype == np.float32 and hit.shape == (384,)


def test_whitespace_and_unicode_variants_share_an_entry(cached: Embedder) -> None:
    text = "Qu'a dit l'utilisateur à propos de Noël ?"
    base = cached.embed_query(text)
    for variant in (f"  {text}\n", text.replace(" ", "  "), unicodedata.normalize("NFD", text)):
        assert cached.embed_query(variant) is base
    assert cached.cache_stats().hits == 3
    assert cached.cache_stats().size == 1


def test_case_variants_are_different_entries(cached: Embedder) -> None:
    """e5 is cased: a lower-cased question has another vector, so another entry."""
    upper = cached.embed_query(QUESTION)
    lower = cached.embed_query(QUESTION.lower())
    assert cached.cache_stats().misses == 2
    assert float(upper @ lower) < 0.9999


def test_least_recently_used_entry_is_evicted(cached: Embedder) -> None:
    a, b, c, d = (f"question number {i} about the user" for i in range(4))
    for text in (a, b, c):
        cached.embed_query(text)
    cached.embed_query(a)  # a is now the most recent; b is the oldest
    cached.embed_query(d)  # evicts b
    stats = cached.cache_stats()
    assert (stats.size, stats.evictions, stats.hits, stats.misses) == (3, 1, 1, 4)
    cached.embed_query(a)
    cached.embed_query(c)
    assert cached.cache_stats().hits == 3
    cached.embed_query(b)  # was evicted: a miss
    assert cached.cache_stats().misses == 5


def test_results_are_read_only(cached: Embedder, uncached: Embedder) -> None:
    for embedder in (cached, uncached):
        vector = embedder.embed_query(QUESTION)
        with pytest.raises(ValueError):
            vector[0] = 1.0
        with pytest.raises(ValueError):
            vector.setflags(write=True)
        copy = np.array(vector)
        copy *= 2.0  # a copy is the caller's own
    cached.embed_query(QUESTION)
    assert cached.embed_query(QUESTION).tobytes() == uncached.embed_query(QUESTION).tobytes()


def test_zero_capacity_disables_the_cache(uncached: Embedder) -> None:
    before = uncached.cache_stats()
    one, two = uncached.embed_query(QUESTION), uncached.embed_query(QUESTION)
    after = uncached.cache_stats()
    assert one is not two
    assert one.tobytes() == two.tobytes()
    assert (after.capacity, after.size, after.hits) == (0, 0, 0)
    assert after.misses == before.misses + 2


def test_passages_are_never_cached(cached: Embedder) -> None:
    cached.embed_passages([QUESTION, "another passage"])
    cached.embed_passages([QUESTION])
    assert cached.cache_stats() == CacheStats(capacity=3, size=0, hits=0, misses=0, evictions=0)


def test_clear_drops_entries_and_keeps_counters(cached: Embedder) -> None:
    cached.embed_query(QUESTION)
    cached.embed_query(QUESTION)
    cached.clear_query_cache()
    assert cached.cache_stats().size == 0
    cached.embed_query(QUESTION)
    stats = cached.cache_stats()
    assert (stats.hits, stats.misses, stats.size) == (1, 2, 1)


def test_concurrent_queries_count_every_lookup(models_dir: Path, uncached: Embedder) -> None:
    embedder = Embedder(PROVIDER, models_dir, query_cache_size=8)
    texts = [f"what did the user say about topic {i}?" for i in range(12)]
    expected = {t: uncached.embed_query(t).tobytes() for t in texts}
    errors: list[str] = []

    def worker(offset: int) -> None:
        for i in range(30):
            text = texts[(i + offset) % len(texts)]
            if embedder.embed_query(text).tobytes() != expected[text]:
                errors.append(text)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stats = embedder.cache_stats()
    assert not errors
    assert stats.hits + stats.misses == 4 * 30
    assert stats.size <= 8


def test_cache_unit_behaviour_without_a_model() -> None:
    cache = QueryCache(2)
    vectors = {name: np.full(4, i, dtype=np.float32) for i, name in enumerate("abc")}
    for name in "ab":
        assert cache.get(QueryCache.key(name)) is None
        cache.put(QueryCache.key(name), vectors[name])
    assert cache.get(QueryCache.key("a")) is vectors["a"]
    cache.put(QueryCache.key("c"), vectors["c"])  # evicts b, the least recently used
    assert cache.get(QueryCache.key("b")) is None
    assert cache.stats() == CacheStats(capacity=2, size=2, hits=1, misses=3, evictions=1)
    assert len(QueryCache.key("x" * 100_000)) == 16
    with pytest.raises(ValueError, match=">= 0"):
        QueryCache(-1)
    assert CacheStats(0, 0, 0, 0, 0).hit_rate == 0.0


def test_another_projects_cached_question_is_a_miss_with_the_same_vector(
        cached: Embedder, uncached: Embedder) -> None:
    """Project B asking what project A asked is a new question for the cache (a miss: the model
    runs, as for any new question), and gets the vector the model computes, as A did."""
    first = cached.embed_query(QUESTION, scope="project-a")
    assert cached.cache_stats().misses == 1
    other = cached.embed_query(QUESTION, scope="project-b")
    stats = cached.cache_stats()
    assert (stats.hits, stats.misses, stats.size) == (0, 2, 2)
    assert other is not first
    assert other.tobytes() == first.tobytes() == uncached.embed_query(QUESTION).tobytes()
    assert cached.embed_query(QUESTION, scope="project-a") is first  # A's own entry: a hit
    assert cached.embed_query(f" {QUESTION}\n", scope="project-b") is other
    assert cached.cache_stats().hits == 2


def test_scope_and_text_cannot_be_confused_in_a_key() -> None:
    assert QueryCache.key("b c", "a") != QueryCache.key("c", "a b")
    assert QueryCache.key("question", "project-a") != QueryCache.key("question", "project-b")
    assert QueryCache.key("question") != QueryCache.key("question", "project-a")


def test_a_project_filling_the_cache_evicts_none_of_anothers_entries(cached: Embedder) -> None:
    """Each project has a capacity of its own: B asking many questions evicts only B's
    entries, so A's stay hits and A cannot learn B's volume from its own evictions."""
    first = cached.embed_query(QUESTION, scope="project-a")
    for i in range(10):
        cached.embed_query(f"question {i} of the busy project", scope="project-b")
    assert cached.embed_query(QUESTION, scope="project-a") is first
    stats = cached.cache_stats()
    assert (stats.size, stats.evictions) == (1 + 3, 10 - 3)


def test_scopes_are_bounded_and_the_least_recent_scope_goes_whole() -> None:
    cache = QueryCache(2, scopes=2)
    vector = np.zeros(4, dtype=np.float32)
    cache.put(QueryCache.key("x", "a"), vector, "a")
    for i in range(5):
        cache.put(QueryCache.key(f"q{i}", "b"), vector, "b")
    assert cache.get(QueryCache.key("x", "a"), "a") is vector  # b's five evicted only b's
    assert (cache.size("a"), cache.size("b")) == (1, 2)
    cache.put(QueryCache.key("y", "c"), vector, "c")  # a third scope: b is the least recent
    assert (cache.size("a"), cache.size("b"), cache.size("c")) == (1, 0, 1)
    assert cache.get(QueryCache.key("q4", "b"), "b") is None
    with pytest.raises(ValueError, match="scopes must be >= 1"):
        QueryCache(2, scopes=0)
