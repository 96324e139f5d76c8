"""The Redis checkpointer against LangGraph's own conformance suite and real graphs.

Servers: the embedded server (the package's default), Debian's redis-server and the
3-master Redis Cluster. The suite's report is printed into the test log (``-s`` or ``-ra``
shows it on failure).
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
import redis
from langchain_core.runnables import RunnableConfig
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import ProgressCallbacks
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from langchain_tiered_memory import EmbeddedRedis, HashingEmbeddings, TieredMemory
from langchain_tiered_memory.backend.connection import RedisConnection
from langchain_tiered_memory.backend.keys import KeyBuilder
from langchain_tiered_memory.persistence.checkpoint import AsyncRedisSaver, RedisSaver


@pytest.fixture(scope="module")
def embedded_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("saver-embedded")).start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(params=["embedded", "redis-server", "cluster"])
def server_url(request: pytest.FixtureRequest) -> str:
    fixture = {
        "embedded": "embedded_url",
        "redis-server": "redis_server_url",
        "cluster": "redis_cluster_url",
    }[request.param]
    return str(request.getfixturevalue(fixture))


def test_conformance_suite_passes_every_capability(
    server_url: str, key_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    @checkpointer_test(name=f"AsyncRedisSaver@{server_url.split(':')[0]}")
    async def factory() -> AsyncIterator[AsyncRedisSaver]:
        async with AsyncRedisSaver.from_url(server_url, key_prefix=key_prefix) as saver:
            yield saver

    report = asyncio.run(validate(factory, progress=ProgressCallbacks.quiet()))
    with capsys.disabled():  # the report goes into the CI log, pass or fail
        print(f"\nconformance on {server_url.split('://')[0]}://... ({key_prefix})")
        report.print_report()
    results = report.to_dict()["results"]
    assert set(results) == {
        "put",
        "put_writes",
        "get_tuple",
        "list",
        "delete_thread",
        "delete_for_runs",
        "copy_thread",
        "prune",
    }
    failed = {cap: r["failures"] for cap, r in results.items() if not r["passed"]}
    assert failed == {}
    assert report.to_dict()["conformance_level"] == "FULL"


# --------------------------------------------------------------------------- real graphs


class Steps(TypedDict):
    log: Annotated[list[str], operator.add]


def approval_graph(saver: RedisSaver) -> Any:
    """a -> (interrupt asking for approval) -> b, with a subgraph inside b."""

    def a(state: Steps) -> dict[str, list[str]]:
        return {"log": ["a"]}

    def ask(state: Steps) -> dict[str, list[str]]:
        answer = interrupt("approve?")
        return {"log": [f"approved:{answer}"]}

    inner = StateGraph(Steps)
    inner.add_node("inner", lambda s: {"log": ["inner"]})
    inner.add_edge(START, "inner")
    inner.add_edge("inner", END)

    builder = StateGraph(Steps)
    builder.add_node("a", a)
    builder.add_node("ask", ask)
    sub = inner.compile()

    def b(state: Steps) -> dict[str, list[str]]:
        # called from a node, the subgraph checkpoints under its own namespace "b:<task>"
        return {"log": sub.invoke({"log": []})["log"]}

    builder.add_node("b", b)
    builder.add_edge(START, "a")
    builder.add_edge("a", "ask")
    builder.add_edge("ask", "b")
    builder.add_edge("b", END)
    return builder.compile(checkpointer=saver)


def scenario(open_saver: Callable[[], contextlib.AbstractContextManager[Any]]) -> list[Any]:
    """Interrupt, resume from another saver object, time travel, fork, subgraph: what a
    user sees at each step (checkpoint ids aside, which differ between runs)."""
    seen: list[Any] = []
    config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
    with open_saver() as saver:
        graph = approval_graph(saver)
        first = graph.invoke({"log": []}, config)
        seen += [first["__interrupt__"][0].value, graph.get_state(config).next]
        with open_saver() as other:  # another process, say, resumes the thread
            seen.append(approval_graph(other).invoke(Command(resume="yes"), config))
        namespaces = {
            t.config["configurable"]["checkpoint_ns"].split(":")[0] for t in saver.list(config)
        }
        seen.append(sorted(namespaces))
        history = list(graph.get_state_history(config))
        seen.append([(s.next, s.values, s.metadata and s.metadata.get("step")) for s in history])
        before_ask = next(s for s in history if s.next == ("ask",))
        replay = graph.invoke(None, before_ask.config)
        seen.append((replay["log"], [i.value for i in replay["__interrupt__"]]))
        seen.append(graph.invoke(Command(resume="no"), graph.get_state(config).config))
        after_a = next(s for s in history if s.values.get("log") == ["a"] and s.next == ("ask",))
        branch = graph.update_state(after_a.config, {"log": ["edited"]})
        seen += [graph.get_state(branch).values, graph.get_state(config).next]
        seen.append(len(list(graph.get_state_history(config))))
        seen.append(len(list(saver.list(config, limit=2))))
    return seen


def test_graphs_see_what_they_see_with_langgraphs_own_saver(
    server_url: str, key_prefix: str
) -> None:
    reference = InMemorySaver()  # one object for both "processes", as one Redis is
    expected = scenario(lambda: contextlib.nullcontext(reference))
    got = scenario(lambda: RedisSaver.from_url(server_url, key_prefix=key_prefix))
    assert got == expected
    assert expected[3] == ["", "b"]  # the subgraph checkpointed in its own namespace
    assert expected[2]["log"] == ["a", "approved:yes", "inner"]


def test_async_graph_on_the_memory_connection(server_url: str, key_prefix: str) -> None:
    async def main() -> list[str]:
        memory = TieredMemory.from_url(
            server_url, key_prefix=key_prefix, embeddings=HashingEmbeddings()
        )
        async with memory:
            graph = approval_graph(memory.acheckpointer())
            # a run on the memory's saver names its user: every thread there is a user's
            config: RunnableConfig = {"configurable": {"thread_id": "async-1", "user_id": "ann"}}
            await graph.ainvoke({"log": []}, config)
            result = await graph.ainvoke(Command(resume="ok"), config)
            return list(result["log"])

    assert asyncio.run(main()) == ["a", "approved:ok", "inner"]


def test_ttl_expires_a_thread_and_reads_refresh_it(embedded_url: str, key_prefix: str) -> None:
    # Time is moved on the server (PEXPIRE), not slept through: every assertion holds
    # however long a step takes (issue 47 item 4).
    ttl = {"default_ttl": 10, "refresh_on_read": True}  # ten minutes
    with RedisSaver.from_url(embedded_url, key_prefix=key_prefix, ttl=ttl) as saver:  # type: ignore[arg-type]
        graph = approval_graph(saver)
        config: RunnableConfig = {"configurable": {"thread_id": "ttl"}}
        graph.invoke({"log": []}, config)
        raw = saver.connection.sync
        keys = [k for k in KeyBuilder(key_prefix).thread_keys("ttl") if raw.exists(k)]
        assert len(keys) >= 3 and all(0 < raw.pttl(k) <= 600_000 for k in keys)
        for k in keys:  # nine of the ten minutes have passed
            raw.pexpire(k, 60_000)
        assert saver.get_tuple(config) is not None  # a read restarts the clock
        assert all(raw.pttl(k) > 60_000 for k in keys)
        for k in keys:  # and now all ten
            raw.pexpire(k, 1)
        deadline = time.monotonic() + 30
        while any(raw.exists(k) for k in keys):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert saver.get_tuple(config) is None  # nothing is served from the process's cache


def test_a_checkpoint_is_never_seen_torn(embedded_url: str, key_prefix: str) -> None:
    """Readers racing a writer see whole checkpoints: the put is one script."""
    import threading

    with RedisSaver.from_url(embedded_url, key_prefix=key_prefix) as saver:
        config: RunnableConfig = {"configurable": {"thread_id": "race", "checkpoint_ns": ""}}
        stop = threading.Event()
        seen: list[int] = []

        def read() -> None:
            while not stop.is_set():
                found = saver.get_tuple(config)
                if found is not None:
                    values = found.checkpoint["channel_values"]
                    assert values["a"] == values["b"], values
                    seen.append(values["a"])

        reader = threading.Thread(target=read)
        reader.start()
        parent: RunnableConfig = config
        from langgraph.checkpoint.base import empty_checkpoint

        try:
            for i in range(200):
                cp = empty_checkpoint()
                cp["channel_values"] = {"a": i, "b": i}
                parent = saver.put(parent, cp, {"step": i}, {})
        finally:
            stop.set()
            reader.join()
        assert seen and seen == sorted(seen)


def test_prefix_acl_user_runs_memory_and_saver(redis_server_url: str, key_prefix: str) -> None:
    """The guide's ACL rule: only the package's key prefix, data commands, no admin."""
    admin = redis.Redis.from_url(redis_server_url)
    user, password = f"u{key_prefix}", "pw-" + uuid.uuid4().hex
    rule = README_ACL_RULE.replace("<prefix>", key_prefix).split()
    admin.acl_setuser(user, reset=True)
    admin.execute_command("ACL", "SETUSER", user, "on", f">{password}", *rule)
    host_port = redis_server_url.split("://", 1)[1]
    url = f"redis://{user}:{password}@{host_port}"
    try:
        limited = redis.Redis.from_url(url)
        with pytest.raises(redis.exceptions.NoPermissionError):
            limited.info()  # admin commands are refused...
        with pytest.raises(redis.exceptions.NoPermissionError):
            limited.set("other-app:key", "x")  # ...and so are other apps' keys
        limited.close()

        memory = TieredMemory.from_url(url, key_prefix=key_prefix, embeddings=HashingEmbeddings())
        with memory:
            from langchain_tiered_memory.agent.graph import create_memory_graph
            from langchain_tiered_memory.testing import ScriptedChatModel

            model = ScriptedChatModel(
                replies=[
                    _call("user_tag", {"name": "Alice", "age": 30}),
                    "Hi Alice!",
                ]
            )
            saver = memory.checkpointer()
            graph = create_memory_graph(model, memory=memory, checkpointer=saver)
            config: RunnableConfig = {"configurable": {"thread_id": "acl-1"}}
            graph.invoke(
                {"messages": [("user", "I'm Alice, 30.")]}, config, context={"user_id": "alice"}
            )
            assert memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
            assert saver.get_tuple(config) is not None
            assert list(saver.list_threads()) == ["acl-1"]
            memory.forget_user("alice", checkpointer=saver)
            assert saver.get_tuple(config) is None
    finally:
        admin.acl_deluser(user)
        admin.close()


def _call(name: str, args: dict[str, Any]) -> Any:
    from langchain_core.messages import AIMessage

    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": uuid.uuid4().hex}])


def _readme_acl_rule() -> str:
    readme = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text()
    marker = "ACL SETUSER app on >secret "
    line = next(x for x in readme.splitlines() if x.startswith(marker))
    # the guide shows the default prefix: swap in the placeholder the test fills in
    return line.split(marker, 1)[1].strip().replace("~tm*", "~<prefix>*")


README_ACL_RULE = _readme_acl_rule()


# --------------------------------------------------------------------------- faults


class Counter(TypedDict):
    n: int
    trail: list[int]


class _AckingSaver(RedisSaver):
    """Records each checkpoint id whose put returned (was acknowledged by Redis)."""

    acked: list[str]

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        stored = super().put(config, checkpoint, metadata, new_versions)
        self.acked.append(stored["configurable"]["checkpoint_id"])
        return stored


def counting_graph(saver: RedisSaver, until: int) -> Any:
    def inc(state: Counter) -> dict[str, Any]:
        time.sleep(0.002)  # a step takes a while, so the kill lands mid-stream
        return {"n": state["n"] + 1, "trail": [*state["trail"], state["n"] + 1]}

    builder = StateGraph(Counter)
    builder.add_node("inc", inc)
    builder.add_edge(START, "inc")
    builder.add_conditional_edges("inc", lambda s: END if s["n"] >= until else "inc")
    return builder.compile(checkpointer=saver)


def test_kill_9_mid_stream_resumes_from_an_acknowledged_checkpoint(tmp_path: Path) -> None:
    """redis-server (appendfsync always) is SIGKILLed while a graph writes a checkpoint
    per step; after a restart the thread's head is whole, no acknowledged checkpoint is
    missing, and the run resumes to the same result as a run that never failed."""
    import threading

    from helpers.servers import RedisProcess

    from langchain_tiered_memory.errors import MemoryBackendError

    server = RedisProcess(tmp_path / "redis").start()
    config: RunnableConfig = {"configurable": {"thread_id": "kill"}, "recursion_limit": 1000}
    errors: list[BaseException] = []
    try:
        saver = _AckingSaver(RedisConnection(server.url, cluster=False), key_prefix="k9")
        saver.acked = []

        def run() -> None:
            try:
                counting_graph(saver, 300).invoke({"n": 0, "trail": []}, config)
            except BaseException as exc:  # the kill surfaces here
                errors.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.monotonic() + 30
        while len(saver.acked) < 60 and time.monotonic() < deadline:
            time.sleep(0.001)
        server.kill()
        worker.join(30)
        acked = list(saver.acked)
        assert errors and isinstance(errors[0], MemoryBackendError), errors
        assert 60 <= len(acked) < 300

        server.start()  # the same port, the same append-only file
        with RedisSaver.from_url(server.url, key_prefix="k9") as again:
            head = again.get_tuple(config)
            assert head is not None
            values = head.checkpoint["channel_values"]
            assert values["trail"] == list(range(1, values["n"] + 1))  # whole, not torn
            stored = {t.config["configurable"]["checkpoint_id"] for t in again.list(config)}
            assert set(acked) <= stored  # nothing acknowledged was lost
            assert len(stored - set(acked)) <= 1  # at most the put in flight at the kill
            assert head.checkpoint["id"] in stored
            final = counting_graph(again, 300).invoke(None, config)
        assert final["n"] == 300 and final["trail"] == list(range(1, 301))
        print(f"kill -9 mid-stream: {len(acked)} acked checkpoints kept, resumed to 300")
    finally:
        server.stop()


def test_async_calls_never_block_the_event_loop(server_url: str, key_prefix: str) -> None:
    """blockbuster (what ``langgraph dev`` runs under) raises on any blocking call made on
    the loop: the first async call used to probe for cluster mode with a blocking socket."""
    from blockbuster import blockbuster_ctx

    async def main() -> list[str]:
        memory = TieredMemory.from_url(
            server_url, key_prefix=key_prefix, embeddings=HashingEmbeddings()
        )
        async with memory:
            with blockbuster_ctx() as watch:
                # network and sleeps only: redis-py reads its own version from the package
                # metadata (a file stat) once per connection, as LangGraph's server allows
                for name, function in watch.functions.items():
                    if not name.startswith(("socket.", "ssl.", "time.sleep")):
                        function.deactivate()
                graph = approval_graph(memory.acheckpointer())
                config: RunnableConfig = {"configurable": {"thread_id": "bb", "user_id": "ann"}}
                await graph.ainvoke({"log": []}, config)
                done = await graph.ainvoke(Command(resume="ok"), config)
                await memory.aset_user_tags("alice", {"name": "Alice"})
                assert await memory.aget_user_tags("alice") == {"name": "Alice"}
                store = memory.store()
                await store.aput(("alice",), "k", {"v": 1})
                assert (await store.aget(("alice",), "k")) is not None
                return list(done["log"])

    assert asyncio.run(main()) == ["a", "approved:ok", "inner"]


# --------------------------------------------------------------------------- TLS


def _certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate for 127.0.0.1, as PEM files."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)

    def cert(subject: str, key: Any, issuer: str, signer: Any, ca: bool) -> Any:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            import ipaddress

            san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
            builder = builder.add_extension(san, critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, server_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    ca = cert("test-ca", ca_key, "test-ca", ca_key, True)
    server = cert("127.0.0.1", server_key, "test-ca", ca_key, False)
    paths = directory / "ca.crt", directory / "server.crt", directory / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    return paths


def test_memory_and_saver_over_tls(tmp_path: Path, key_prefix: str) -> None:
    """rediss:// to Debian's redis-server started with a test certificate; a client that
    does not trust its CA gets a clear error, not a hang."""
    from helpers.servers import RedisProcess, free_port

    from langchain_tiered_memory.errors import MemoryBackendError

    ca, cert, key = _certificates(tmp_path)
    tls_port = free_port()
    server = RedisProcess(
        tmp_path / "redis",
        None,
        "--tls-port",
        str(tls_port),
        "--tls-cert-file",
        str(cert),
        "--tls-key-file",
        str(key),
        "--tls-ca-cert-file",
        str(ca),
        "--tls-auth-clients",
        "no",
    ).start()
    url = f"rediss://127.0.0.1:{tls_port}/0?ssl_ca_certs={ca}&ssl_cert_reqs=required"
    try:
        memory = TieredMemory.from_url(url, key_prefix=key_prefix, embeddings=HashingEmbeddings())
        with memory:
            memory.set_user_tags("alice", {"name": "Alice"})
            graph = approval_graph(memory.checkpointer())
            config: RunnableConfig = {"configurable": {"thread_id": "tls", "user_id": "ann"}}
            graph.invoke({"log": []}, config)
            assert graph.invoke(Command(resume="ok"), config)["log"][-1] == "inner"

            async def read() -> dict[str, str]:
                return await memory.aget_user_tags("alice")

            assert asyncio.run(read()) == {"name": "Alice"}
        plain = TieredMemory.from_url(
            f"rediss://127.0.0.1:{tls_port}/0?ssl_cert_reqs=required",
            key_prefix=key_prefix,
            embeddings=HashingEmbeddings(),
        )
        with plain, pytest.raises(MemoryBackendError, match="unreachable|certificate"):
            plain.get_user_tags("alice")  # the system CAs do not know the test CA
    finally:
        server.stop()


# --------------------------------------------------------------------------- DeltaChannel


def _concat(state: list[str], writes: Any) -> list[str]:
    return [*state, *(item for write in writes for item in write)]


class Notes(TypedDict):
    notes: Annotated[list[str], DeltaChannel(_concat, snapshot_frequency=3)]


def test_delta_channel_state_is_rebuilt_as_with_langgraphs_own_saver(
    server_url: str, key_prefix: str
) -> None:
    """LangGraph's (beta) DeltaChannel stores only deltas and rebuilds the value from the
    ancestors' writes (``get_delta_channel_history``): a fresh saver reads back the same
    state and history as InMemorySaver, across snapshots."""

    def build(saver: Any) -> Any:
        builder = StateGraph(Notes)
        builder.add_node("a", lambda s: {"notes": [f"a{len(s['notes'])}"]})
        builder.add_node("b", lambda s: {"notes": [f"b{len(s['notes'])}"]})
        builder.add_edge(START, "a")
        builder.add_edge("a", "b")
        builder.add_edge("b", END)
        return builder.compile(checkpointer=saver)

    def run(open_saver: Any) -> list[Any]:
        config: RunnableConfig = {"configurable": {"thread_id": "delta"}}
        with open_saver() as saver:
            graph = build(saver)
            for turn in range(5):
                graph.invoke({"notes": [f"in{turn}"]}, config)
        with open_saver() as fresh:  # nothing cached: rebuilt from stored writes
            graph = build(fresh)
            history = [s.values.get("notes") for s in graph.get_state_history(config)]
            return [graph.get_state(config).values["notes"], history]

    reference = InMemorySaver()
    expected = run(lambda: contextlib.nullcontext(reference))
    got = run(lambda: RedisSaver.from_url(server_url, key_prefix=key_prefix))
    assert got == expected
    assert len(expected[0]) == 15  # 5 turns x (input, a, b)


# --------------------------------------------------------------------------- a stalled server


def test_a_stalled_server_is_waited_out_or_a_clear_error_and_nothing_is_torn(
    tmp_path: Path,
) -> None:
    """CLIENT PAUSE: a 2 s stall (below the 5 s reply timeout) is waited out by the saver
    and the store; a 12 s stall is a MemoryBackendError in bounded time (the 5 s reply
    timeout; the stall is long enough that a loaded machine cannot blur the two), and
    afterwards the thread's head is a whole checkpoint and the run goes on."""
    import threading

    from helpers.servers import RedisProcess, raw_client

    from langchain_tiered_memory.errors import MemoryBackendError
    from langchain_tiered_memory.persistence.store import RedisStore

    server = RedisProcess(tmp_path / "redis").start()
    config: RunnableConfig = {"configurable": {"thread_id": "stall"}, "recursion_limit": 100}

    def pause(seconds: int) -> threading.Thread:
        def run() -> None:
            with raw_client(server.url, timeout=seconds + 5) as r:
                r.execute_command("CLIENT", "PAUSE", seconds * 1000, "ALL")

        thread = threading.Thread(target=run)
        thread.start()
        thread.join()  # the pause is in force when this returns
        return thread

    try:
        with (
            RedisSaver.from_url(server.url, key_prefix="st") as saver,
            RedisStore.from_url(server.url, key_prefix="st") as store,
        ):
            saver.setup()
            store.setup()
            pause(2)
            started = time.monotonic()
            assert counting_graph(saver, 5).invoke({"n": 0, "trail": []}, config)["n"] == 5
            store.put(("ns",), "k", {"v": 1})
            assert time.monotonic() - started > 1.0  # it waited, it did not fail
            assert store.get(("ns",), "k") is not None

            graph = counting_graph(saver, 10)
            pause(12)
            started = time.monotonic()
            with pytest.raises(MemoryBackendError, match="timed out"):
                graph.invoke({"n": 5, "trail": [1, 2, 3, 4, 5]}, config)  # on to 10
            assert time.monotonic() - started < 12.0  # bounded by the reply timeout
            time.sleep(max(0.0, 12.5 - (time.monotonic() - started)))
            head = saver.get_tuple(config)
            assert head is not None
            values = head.checkpoint["channel_values"]
            assert values["trail"] == list(range(1, values["n"] + 1))  # whole
            # resume the interrupted run, or start it again if its input never landed
            again = None if graph.get_state(config).next else dict(values)
            assert graph.invoke(again, config)["trail"] == list(range(1, 11))
    finally:
        server.stop()


def test_a_checkpoint_with_9000_pending_writes_loads_and_deletes(
    server_url: str, key_prefix: str
) -> None:
    """A wide Send fan-out leaves thousands of writes on one checkpoint: the load and the
    delete scripts read and drop them in chunks (one unpack() of all of them overflowed
    Lua's stack past about 8,000 and the thread could never be read again)."""
    from langgraph.checkpoint.base import empty_checkpoint

    with RedisSaver.from_url(server_url, key_prefix=key_prefix) as saver:
        config: RunnableConfig = {"configurable": {"thread_id": "wide", "checkpoint_ns": ""}}
        stored = saver.put(config, empty_checkpoint(), {"step": 1}, {})
        n = 9000
        for start in range(0, n, 1000):
            for task in range(start, start + 1000):
                saver.put_writes(stored, [("results", task)], task_id=f"task-{task:05d}")
        got = saver.get_tuple(stored)
        assert got is not None and got.pending_writes is not None
        assert len(got.pending_writes) == n
        assert sorted(v for _, _, v in got.pending_writes) == list(range(n))
        # "" as the checkpoint id reads the latest, as InMemorySaver does
        latest = saver.get_tuple({"configurable": {**config["configurable"], "checkpoint_id": ""}})
        assert latest is not None and latest.config == got.config
        assert [
            c.config
            for c in saver.list({"configurable": {"thread_id": "wide", "checkpoint_id": ""}})
        ] == [got.config]
        saver.delete_thread("wide")
        assert saver.get_tuple(config) is None
        raw = saver.connection.sync
        assert not any(raw.exists(k) for k in KeyBuilder(key_prefix).thread_keys("wide"))


@pytest.mark.parametrize("planted", [b"\x00not msgpack", b"\x93\x01\x02\x03", b""])
def test_a_malformed_checkpoint_record_is_corrupt_memory_naming_thread_and_key(
    server_url: str, key_prefix: str, planted: bytes
) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    from langchain_tiered_memory import CorruptMemoryError

    with RedisSaver.from_url(server_url, key_prefix=key_prefix) as saver:
        for thread in ("broken", "fine"):
            config: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
            stored = saver.put(config, empty_checkpoint(), {"step": 1}, {})
        raw = saver.connection.sync
        data_key = KeyBuilder(key_prefix).thread_keys("broken")[1]
        (member,) = raw.hkeys(data_key)
        raw.hset(data_key, member, planted)
        broken: RunnableConfig = {"configurable": {"thread_id": "broken"}}
        for read in (lambda: saver.get_tuple(broken), lambda: list(saver.list(broken))):
            with pytest.raises(CorruptMemoryError, match=f"thread 'broken'.*{data_key}"):
                read()
        assert saver.get_tuple(stored) is not None  # the other thread still loads
        saver.delete_thread("broken")  # and the broken one can be removed
        assert saver.get_tuple(broken) is None
