"""API keys without a database: shape, hashing, display prefix."""

import hashlib

from haki.keys import KEY_PREFIX, hash_key, looks_like_key
from haki_local.admin import display_prefix, generate_key


def test_generated_keys_are_prefixed_random_and_well_formed() -> None:
    keys = {generate_key() for _ in range(200)}
    assert len(keys) == 200
    assert all(k.startswith(KEY_PREFIX) and looks_like_key(k) for k in keys)


def test_hash_is_sha256_hex_of_the_whole_key() -> None:
    key = generate_key()
    assert hash_key(key) == hashlib.sha256(key.encode()).hexdigest()
    assert len(hash_key(key)) == 64 and hash_key(key) != hash_key(key + "x")


def test_display_prefix_reveals_only_the_start() -> None:
    key = generate_key()
    assert display_prefix(key) == key[:10] and key.startswith(display_prefix(key))
    assert len(key) - len(display_prefix(key)) >= 36  # ≥ 216 random bits stay hidden


def test_malformed_keys_are_refused_before_any_lookup() -> None:
    for bad in ("", "hk_", "hk_short", "sk_" + "a" * 40, "hk_" + "a" * 40 + " ", "hk_é" * 10,
                "hk_" + "a" * 200):
        assert not looks_like_key(bad), bad


def test_a_projects_usage_key_is_stable_its_own_and_long_enough_for_api_gateway() -> None:
    from haki.keys import USAGE_KEY_PREFIX, usage_key

    key = usage_key("acme-support")
    assert key == usage_key("acme-support")
    assert key != usage_key("acme-support2") and key != usage_key("acme-suppor")
    assert key.startswith(USAGE_KEY_PREFIX) and 20 <= len(key) <= 128
    assert "acme" not in key
