"""The same text gives bit-identical vectors in separate processes."""

import subprocess
import sys
from pathlib import Path

import numpy as np

from haki.embedding import Embedder

TEXTS = ["The user's cat is called Miso.", "Le chat de l'utilisateur s'appelle Miso.", ""]

CHILD = """
import sys
from pathlib import Path
from haki.embedding import Embedder
e = Embedder(sys.argv[1], Path(sys.argv[2]))
texts = sys.argv[3:]
sys.stdout.buffer.write(e.embed_query(texts[0]).tobytes() + e.embed_passages(texts).tobytes())
"""


def test_vectors_are_identical_across_processes(embedder: Embedder) -> None:
    expected = embedder.embed_query(TEXTS[0]).tobytes() + embedder.embed_passages(TEXTS).tobytes()
    model_dir = str(Path(embedder.folder).parent)
    for _ in range(2):
        child = subprocess.run(
            [sys.executable, "-c", CHILD, embedder.provider, model_dir, *TEXTS],
            capture_output=True,
            check=True,
            timeout=120,
        )
        assert child.stdout == expected
    assert np.frombuffer(expected, dtype=np.float32).size == 384 * (1 + len(TEXTS))
