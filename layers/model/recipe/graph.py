"""The fused encoder graph (build time only): the BERT of ``bert.py`` written directly with
onnxruntime's fused CPU operators instead of exported from PyTorch.

The exported graph has ~940 nodes (410 after onnxruntime's own load-time optimisations: the
attention stays ~20 small shape/reshape/transpose nodes per layer and nothing fuses the
residual adds into the layer norms). Here each layer is 10 nodes::

    MatMulNBits(q|k|v, bias) → Split → MultiHeadAttention(key_padding_mask)
    → MatMulNBits(ao, bias) → Sum(residual) → LayerNormalization
    → MatMulNBits(fi) → BiasGelu (erf) → MatMulNBits(fo, bias) → Sum → LayerNormalization

and the embedding is GatherBlockQuantized + a slice of the position table +
LayerNormalization; pooling is one masked MatMul, a division by the token count and an L2
normalisation.

With ``activation_max`` (the default e5 provider) each MatMulNBits becomes an integer GEMM:
the input is smoothed (SmoothQuant, α = 0.5: divided per channel by factors folded into the
weight), quantized to uint8 per token row in the graph (ReduceMax/ReduceMin → QuantizeLinear
with one block per row), multiplied by int8 weights with ``MatMulIntegerToFloat`` (MLAS's
QGEMM, which amortises the weights over the rows where MatMulNBits costs the same per row),
and the row minimum's share added back. A token row's vector still depends on that row only,
so batching never changes a text's embedding.

Same arithmetic as ``bert.py`` (erf GELU, 1/sqrt(head_dim) scaling, masked keys get -10000
before the softmax, which underflows to exactly 0 as -1e9 does), so padding still never reaches
a text's vector. The recipe checks the result against the PyTorch reference.
"""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from quantize import BlockQuant
from sources import BertConfig

OPSET = 21  # QuantizeLinear's blocked quantization (one scale per token row) is opset 21
MS_DOMAIN = "com.microsoft"
#: Below the minimum of the erf GELU (-0.169971 at x = -0.7518), so BiasGelu's output minus it
#: is never negative.
GELU_FLOOR = -0.17
#: SmoothQuant's migration strength: 0 leaves the activations as they are, 1 flattens them.
SMOOTHING_ALPHA = 0.5


@dataclass(frozen=True)
class Layer:
    """One encoder layer's quantized linears (``[out, in]``) and float vectors."""

    qkv: BlockQuant  # rows: q, then k, then v
    ao: BlockQuant
    fi: BlockQuant
    fo: BlockQuant


def _nbits(quant: BlockQuant, name: str, accuracy_level: int) -> tuple[list, dict]:
    n_out, k_in = quant.q.shape
    inits = [
        numpy_helper.from_array(
            np.ascontiguousarray(quant.packed().reshape(n_out, k_in // quant.block, -1)),
            name + "_q",
        ),
        numpy_helper.from_array(np.ascontiguousarray(quant.scales.reshape(-1)), name + "_scales"),
    ]
    attrs = {
        "K": k_in,
        "N": n_out,
        "bits": quant.bits,
        "block_size": quant.block,
        "accuracy_level": accuracy_level,
    }
    return inits, attrs


def _channels_int7(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A float ``[out, in]`` weight as ``[in, out]`` int8 in [-64, 64] with one scale per output
    channel (symmetric, round to nearest). Seven bits and a sign, not eight: a uint8 × int8
    pair then sums to at most 2·255·64 = 32,640, inside the int16 that x86's kernels without
    VNNI (vpmaddubsw) add pairs into, so the integer product is exact on every CPU."""
    steps = np.abs(weight).max(axis=1) / 64.0
    safe = np.where(steps == 0.0, 1.0, steps)
    q = np.clip(np.rint(weight / safe[:, None]), -64, 64).astype(np.int8)
    return np.ascontiguousarray(q.T), safe.astype(np.float32)


def smoothing(activation_max: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """SmoothQuant's per-input-channel factors ``f`` (x/f goes into the GEMM, W·f is
    quantized): they move the activations' outlier channels (GELU outputs reach 33 where the
    median channel stays near 1) into the weights, so the per-row uint8 steps stay fine."""
    a = np.maximum(activation_max.astype(np.float64), 1e-5)
    w = np.maximum(np.abs(weight).max(axis=0), 1e-5)
    return a**SMOOTHING_ALPHA / w ** (1.0 - SMOOTHING_ALPHA)


# One pass writes the whole ONNX graph: its nested helpers append to the same node and
# initializer lists, and each encoder layer's branches (integer GEMM or MatMulNBits) read
# best in order, so the paths are counted together.
def build_graph(  # noqa: C901
    cfg: BertConfig,
    vectors: Mapping[str, np.ndarray],
    layers: list[Layer],
    table: BlockQuant,
    accuracy_level: int,
    doc: str,
    activation_max: list[dict[str, np.ndarray]] | None = None,
) -> onnx.ModelProto:
    """``vectors``: the float weights named like ``l0.q.w``, ``l0.q.b``, ``l0.aln.w``, plus
    ``emb.pos`` (positions × hidden), ``emb.type`` and ``emb.ln.w/b``; the MatMulNBits path
    takes the linears from ``layers`` instead.

    ``activation_max`` (per layer, per input channel: the largest |input| of ``qkv``, ``ao``,
    ``fi`` and ``fo`` — for ``fo``, of GELU's output minus ``GELU_FLOOR`` — on calibration
    text) switches the linears from MatMulNBits to integer GEMM with smoothing."""
    h = cfg.hidden
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op: str, inputs: list[str], outputs: list[str], domain: str = "", **attrs) -> None:
        nodes.append(
            helper.make_node(op, inputs, outputs, name=f"{outputs[0]}_{op}", domain=domain, **attrs)
        )

    def f32(name: str) -> np.ndarray:
        return np.asarray(vectors[name], dtype=np.float32)

    def f64(name: str) -> np.ndarray:
        return np.array(vectors[name], dtype=np.float64)

    def matmul(x: str, quant: BlockQuant, name: str, bias: str = "") -> str:
        q_inits, attrs = _nbits(quant, name, accuracy_level)
        inits.extend(q_inits)
        inputs = [x, name + "_q", name + "_scales"] + (["", "", bias] if bias else [])
        node("MatMulNBits", inputs, [name], MS_DOMAIN, **attrs)
        return name

    def qgemm(
        x: str, weight: np.ndarray, name: str, floor: tuple[float, np.ndarray] | None = None
    ) -> tuple[list[str], np.ndarray | None]:
        """Integer GEMM of ``x @ weight.T``: ``x`` is quantized per token row to uint8 over
        [lo, row max] (``x ≈ lo + s·q``, ``s = (max − lo) / 255``) and ``MatMulIntegerToFloat``
        gives ``s·ws·(q @ W)``, ``ws`` the weight's per-channel scales. ``lo`` is the row
        minimum, whose share ``lo ⊗ (colsum(W)·ws)`` is returned as a second term. With
        ``floor = (c, f)``, ``x`` is an input known to stay above ``c`` already shifted by it
        and divided by ``f`` (GELU's output): it is quantized over [0, row max], and the
        share of ``c`` comes back as a constant for the caller's bias instead. A constant row
        gives ``s = 0``: whatever ``0/0`` quantizes to is then multiplied by 0, as it should
        be. Returns the terms whose sum is the product, and that constant."""
        w, w_scales = _channels_int7(weight)
        const(name + "_w", w)
        const(name + "_ws", w_scales)
        n = name
        node("ReduceMax", [x, "last_axis"], [n + "_hi"], keepdims=1)
        if floor is not None:
            node("Mul", [n + "_hi", "inv_levels"], [n + "_s"])
            shifted = x
        else:
            node("ReduceMin", [x, "last_axis"], [n + "_lo"], keepdims=1)
            node("Sub", [n + "_hi", n + "_lo"], [n + "_range"])
            node("Mul", [n + "_range", "inv_levels"], [n + "_s"])
            shifted = n + "_shifted"
            node("Sub", [x, n + "_lo"], [shifted])
        # Blocked quantization with one block per row: the scale has shape [batch, tokens, 1].
        node(
            "QuantizeLinear", [shifted, n + "_s"], [n + "_xq"], axis=-1, block_size=cfg.intermediate
        )
        node("MatMulIntegerToFloat", [n + "_xq", n + "_w", n + "_s", n + "_ws"], [n], MS_DOMAIN)
        if floor is not None:
            c, factors = floor
            values = w.T.astype(np.float64) * w_scales[:, None]
            return [n], c * (values / factors).sum(axis=1)
        colsum = w.astype(np.float64).sum(axis=0) * w_scales
        const(n + "_cw", colsum.astype(np.float32))
        node("Mul", [n + "_lo", n + "_cw"], [n + "_corr"])
        return [n, n + "_corr"], None

    def smoothed(x: str, factors: np.ndarray, name: str) -> str:
        const(name + "_inv_f", (1.0 / factors).astype(np.float32))
        node("Mul", [x, name + "_inv_f"], [name + "_xs"])
        return name + "_xs"

    def residual_norm(y: list[str], residual: str, norm: str, out: str) -> str:
        # Sum rather than Add: onnxruntime fuses Add + LayerNormalization into
        # SkipLayerNormalization, whose CPU kernel measured ~42 µs per call on 17 × 384
        # against ~13 µs for the two nodes it replaces.
        node("Sum", [*y, residual], [out + "_sum"])
        node(
            "LayerNormalization", [out + "_sum", norm + "_w", norm + "_b"], [out], axis=-1,
            epsilon=cfg.eps,
        )
        return out

    if activation_max is not None:
        const("last_axis", np.array([-1], dtype=np.int64))
        const("inv_levels", np.array(1.0 / 255.0, dtype=np.float32))

    # Embeddings: word (4-bit table) + position (+ the token-type-0 row, folded in) → LayerNorm.
    inits.extend(
        [
            numpy_helper.from_array(table.packed(), "word_q"),
            numpy_helper.from_array(table.scales, "word_scales"),
        ]
    )
    node(
        "GatherBlockQuantized", ["word_q", "input_ids", "word_scales"], ["word"], MS_DOMAIN,
        gather_axis=0, quantize_axis=1, block_size=table.block, bits=table.bits,
    )
    const("pos_table", f32("emb.pos") + f32("emb.type")[None, :])
    const("zero", np.array([0], dtype=np.int64))
    node("Shape", ["input_ids"], ["tokens"], start=1, end=2)
    node("Slice", ["pos_table", "zero", "tokens", "zero"], ["pos"])
    const("emb_ln_w", f32("emb.ln.w"))
    const("emb_ln_b", f32("emb.ln.b"))
    node("Sum", ["word", "pos"], ["emb_sum"])
    node(
        "LayerNormalization", ["emb_sum", "emb_ln_w", "emb_ln_b"], ["x_emb"], axis=-1,
        epsilon=cfg.eps,
    )
    node("Cast", ["attention_mask"], ["mask_i32"], to=TensorProto.INT32)

    x = "x_emb"
    for i, layer in enumerate(layers):
        p = f"l{i}"
        qkv_bias = np.concatenate([f32(f"{p}.q.b"), f32(f"{p}.k.b"), f32(f"{p}.v.b")])
        for name in ("ao.b", "aln.w", "aln.b", "fi.b", "oln.w", "oln.b"):
            const(f"{p}_{name.replace('.', '_')}", f32(f"{p}.{name}"))
        if activation_max is None:
            qkv = matmul(x, layer.qkv, f"{p}_qkv", const(f"{p}_qkv_b", qkv_bias))
        else:
            stats = activation_max[i]
            # ao's smoothing divides V's output channels (rows and bias): exact, no node.
            w_ao = f64(f"{p}.ao.w")
            f_ao = smoothing(stats["ao"], w_ao)
            w_qkv = np.concatenate([f64(f"{p}.{part}.w") for part in ("q", "k", "v")])
            w_qkv[2 * h :] /= f_ao[:, None]
            qkv_bias[2 * h :] /= f_ao
            f_qkv = smoothing(stats["qkv"], w_qkv)
            qkv = f"{p}_qkv_out"
            terms, _ = qgemm(smoothed(x, f_qkv, f"{p}_qkv"), w_qkv * f_qkv, f"{p}_qkv")
            node("Sum", [*terms, const(f"{p}_qkv_b", qkv_bias)], [qkv])
        node("Split", [qkv], [f"{p}_q", f"{p}_k", f"{p}_v"], axis=-1, num_outputs=3)
        node(
            "MultiHeadAttention", [f"{p}_q", f"{p}_k", f"{p}_v", "", "mask_i32"], [f"{p}_ctx"],
            MS_DOMAIN, num_heads=cfg.heads,
        )
        if activation_max is None:
            ao = [matmul(f"{p}_ctx", layer.ao, f"{p}_ao", f"{p}_ao_b")]
        else:
            ao = [*qgemm(f"{p}_ctx", w_ao * f_ao, f"{p}_ao")[0], f"{p}_ao_b"]
        x1 = residual_norm(ao, x, f"{p}_aln", f"{p}_x1")
        if activation_max is None:
            fi = matmul(x1, layer.fi, f"{p}_fi")
        else:
            w_fi = f64(f"{p}.fi.w")
            f_fi = smoothing(stats["fi"], w_fi)
            fi = f"{p}_fi_sum"
            node("Sum", qgemm(smoothed(x1, f_fi, f"{p}_fi"), w_fi * f_fi, f"{p}_fi")[0], [fi])
        node("BiasGelu", [fi, f"{p}_fi_b"], [f"{p}_gelu"], MS_DOMAIN)
        fo_b = f32(f"{p}.fo.b")
        if activation_max is None:
            fo = [matmul(f"{p}_gelu", layer.fo, f"{p}_fo", const(f"{p}_fo_b", fo_b))]
        else:
            # GELU's output minus its floor is >= 0: quantized over [0, row max], and the
            # floor's share of the product is a constant, added to the bias.
            w_fo = f64(f"{p}.fo.w")
            f_fo = smoothing(stats["fo"], w_fo)
            const(f"{p}_gelu_floor", np.array(-GELU_FLOOR, dtype=np.float32))
            node("Add", [f"{p}_gelu", f"{p}_gelu_floor"], [f"{p}_gelu_up"])
            xs = smoothed(f"{p}_gelu_up", f_fo, f"{p}_fo")
            terms, floor_share = qgemm(xs, w_fo * f_fo, f"{p}_fo", (GELU_FLOOR, f_fo))
            fo = [*terms, const(f"{p}_fo_b", (fo_b + floor_share).astype(np.float32))]
        x = residual_norm(fo, x1, f"{p}_oln", f"{p}_x2")

    # Masked mean pooling, then L2 normalisation (eps as torch.nn.functional.normalize).
    node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT)
    const("axis1", np.array([1], dtype=np.int64))
    node("Unsqueeze", ["mask_f", "axis1"], ["mask_row"])
    node("MatMul", ["mask_row", x], ["summed3"])
    node("Squeeze", ["summed3", "axis1"], ["summed"])
    node("ReduceSum", ["mask_f", "axis1"], ["count_raw"], keepdims=1)
    const("one", np.array(1.0, dtype=np.float32))
    const("eps", np.array(1e-12, dtype=np.float32))
    node("Max", ["count_raw", "one"], ["count"])
    node("Div", ["summed", "count"], ["mean"])
    node("ReduceL2", ["mean", "axis1"], ["norm_raw"], keepdims=1)
    node("Max", ["norm_raw", "eps"], ["norm"])
    node("Div", ["mean", "norm"], ["embedding"])

    graph = helper.make_graph(
        nodes,
        "sentence_encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", h])],
        inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MS_DOMAIN, 1)],
        producer_name="haki-recipe",
        doc_string=doc,
    )
    model.ir_version = 10
    return model
