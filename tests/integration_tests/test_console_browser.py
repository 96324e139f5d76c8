"""The web console (``tiered-memory ui``) in a real headless browser: Debian's chromium,
driven by Playwright with the system browser (no browser download), against the console
served by uvicorn on a loopback port over the embedded Redis.

Each scenario also checks the stored data through the package, not only the page.
``TM_SCREENSHOTS=docs/img`` keeps the screenshots the guide shows.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
import redis
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory import EmbeddedRedis, TieredMemory, create_memory_graph
from langchain_tiered_memory.embeddings import HashingEmbeddings
from langchain_tiered_memory.testing import ScriptedChatModel

uvicorn = pytest.importorskip("uvicorn", reason="the [ui] extra is not installed")
from langchain_tiered_memory.console import create_app  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
SHOTS = os.environ.get("TM_SCREENSHOTS")
ROOT = Path(__file__).resolve().parents[2]


def _browser_or_skip() -> str:
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    msg = (
        f"{CHROMIUM} not found: the console's browser tests need Debian's chromium; "
        "`bash scripts/test.sh` installs it (apt-get install chromium)"
    )
    if os.environ.get("CI"):
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Console:
    """The console app served by uvicorn in a thread, on a free loopback port."""

    def __init__(self, memory: TieredMemory, **options: Any) -> None:
        self.port = _free_port()
        app = create_app(memory, **options)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Console:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the console did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _browser_or_skip()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=executable,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def memory(data_dir: Path) -> Iterator[TieredMemory]:
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        yield memory


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:  # an alert() means a stored script ran
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.dialogs = dialogs
    yield page
    context.close()
    assert not errors, errors


def shot(page: Any, name: str) -> None:
    if SHOTS:
        target = ROOT / SHOTS if not Path(SHOTS).is_absolute() else Path(SHOTS)
        target.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(target / f"console-{name}.png"), full_page=True)


def scan_dump(memory: TieredMemory) -> dict[str, bytes | None]:
    """Every data key of the memory's Redis (SCAN, never KEYS) and its DUMP; the
    summarization queue's shard keys are shared by all users and left out."""
    assert memory.redis_url is not None
    client = redis.Redis.from_url(memory.redis_url)
    try:
        keys = [k for k in client.scan_iter(count=1000) if b":{wq:" not in k]
        return {k.decode(): client.dump(k) for k in keys}
    finally:
        client.close()


def tag_call(**args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "user_tag", "args": args, "id": "c1"}])


def turn(graph: Any, text: str, user: str = "alice", thread: str = "t1") -> None:
    graph.invoke(
        {"messages": [HumanMessage(text)]},
        context={"user_id": user},
        config={"configurable": {"thread_id": thread}},
    )


def system_prompt(model: ScriptedChatModel) -> str:
    return [p for p in model.prompts if "user_facts" not in p[0].text][-1][0].text


def test_what_the_graph_stored_shows_and_a_tag_fixed_in_the_console_reaches_the_next_prompt(
    memory: TieredMemory, page: Any
) -> None:
    model = ScriptedChatModel(replies=[tag_call(name="Alice", age=30), "Noted, Alice."])
    graph = create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())
    turn(graph, "Hi, I'm Alice and I am 30 years old.")
    memory.add_summaries("alice", ["The user failed their driving test last spring."])
    memory.add_summaries("李明", ["用户的生日是3月5日。"])
    memory.set_user_tags("李明", {"name": "李明", "age": 28})

    with Console(memory) as console:
        page.goto(console.url + "/")
        rows = page.locator("#users tbody tr")
        assert sorted(rows.locator("td:first-child").all_inner_texts()) == ["alice", "李明"]
        shot(page, "users")
        page.get_by_role("link", name="alice").click()
        assert page.locator("#user-id").inner_text() == "alice"
        assert page.locator("tr[data-tag=age] td.value").inner_text() == "30"
        assert "t1" in page.locator("tr[data-tag=age] .changes").inner_text()  # set by thread t1
        assert "driving test" in page.locator("#items").inner_text()
        assert "Hi, I'm Alice" in page.locator("#history").inner_text()
        # fix the age: the next graph turn's prompt holds the new value
        page.get_by_label("new value of age").fill("31")
        page.locator("tr[data-tag=age]").get_by_role("button", name="Save").click()
        assert page.locator("#notice").inner_text() == "tag age saved"
        assert page.locator("tr[data-tag=age] td.value").inner_text() == "31"
        assert "30 → 31" in page.locator("tr[data-tag=age] .changes").inner_text()
        shot(page, "user")
        # Chinese content shows as stored
        page.goto(console.url + "/")
        page.get_by_role("link", name="李明").click()
        assert page.locator("tr[data-tag=name] td.value").inner_text() == "李明"
        assert "用户的生日是3月5日。" in page.locator("#items").inner_text()

    model.replies += ["You are 31."]
    turn(graph, "How old am I?")
    assert '"age": "31"' in system_prompt(model)
    assert memory.get_tag_history("alice", "age")[-1]["previous"] == "30"


def test_a_deleted_item_is_no_longer_recalled_and_an_edit_is_re_embedded(
    memory: TieredMemory, page: Any
) -> None:
    memory.add_summaries(
        "alice", ["The user failed their driving test.", "The user has a cat named Tom."]
    )
    with Console(memory) as console:
        page.goto(console.url + "/user?u=alice")
        (cat_id,) = [d.id for d in memory.summaries.get_all("alice") if "cat" in d.page_content]
        row = page.locator(f"tr[data-item='{cat_id}']")
        # issue 46 item 2: an erasure asks first; Cancel leaves the item, confirm deletes it
        row.get_by_role("button", name="Delete").click()
        assert page.locator("#confirm-detail").inner_text() == "The user has a cat named Tom."
        assert len(memory.summaries.get_all("alice")) == 2  # nothing erased yet
        page.locator("#cancel").click()
        assert "cat named Tom" in page.locator("#items").inner_text()
        page.locator(f"tr[data-item='{cat_id}']").get_by_role("button", name="Delete").click()
        page.get_by_role("button", name="Delete the item").click()
        assert page.locator("#notice").inner_text() == f"item {cat_id} deleted"
        assert "cat named Tom" not in page.locator("#items").inner_text()
        (test_id,) = [d.id for d in memory.summaries.get_all("alice")]
        row = page.locator(f"tr[data-item='{test_id}']")
        # issue 46 item 4: the text is shown once; its editor opens on "Edit"
        assert not row.get_by_label(f"text of item {test_id}").is_visible()
        row.locator("summary", has_text="Edit").click()
        row.get_by_label(f"text of item {test_id}").fill("The user passed their driving test.")
        row.get_by_role("button", name="Save (re-embed)").click()
        assert "passed their driving test" in page.locator("#items").inner_text()
        # the playground shows the graph's memory section and each item's scores
        page.goto(console.url + "/user/playground?u=alice")
        page.get_by_label("turns").fill("I have a big exam on Friday.\nHow did my driving test go?")
        page.get_by_role("button", name="Recall").click()
        assert "passed their driving test" in page.locator("#section").inner_text()
        cells = page.locator("#recalled tbody tr").first.locator("td").all_inner_texts()
        assert cells[1] == test_id and float(cells[4]) > 0 and cells[5] != ""  # score, dense
        # issue 46 item 3: the item's id explains its place, one click
        page.locator("#recalled tbody tr").first.get_by_role("link", name=str(test_id)).click()
        assert "Recalled at #1" in page.locator("#explained").inner_text()
        shot(page, "playground")
    recalled = memory.recall_summaries("alice", "Tell me about my cat Tom", n=5)
    assert [d.page_content for d in recalled] == ["The user passed their driving test."]


def test_forget_in_the_console_leaves_no_key_of_the_user_and_every_other_key_intact(
    memory: TieredMemory, page: Any
) -> None:
    assert memory.redis_url is not None
    raw = redis.Redis.from_url(memory.redis_url)
    raw.config_set("rdbcompression", "no")  # so that a search of the files sees every string
    raw.close()
    for user in ("alice", "alice2", "Alice"):  # look-alike ids must survive
        memory.add_session_log(user, [HumanMessage(f"I am {user}"), AIMessage("Hello")])
        memory.set_user_tags(user, {"name": user})
        memory.add_summaries(user, [f"The user is called {user}."])
        # what an app keeps of them in the memory's checkpointer and store (issue 43)
        memory.store().put(("memories", user), "m", {"content": f"{user} likes tea"})
    graph: Any = create_memory_graph(
        ScriptedChatModel(replies=["Noted."]), memory=memory, checkpointer=memory.checkpointer()
    )
    for user in ("alice", "alice2"):
        graph.invoke(
            {"messages": [HumanMessage(f"My PIN is {user}-4711.")]},
            {"configurable": {"thread_id": f"{user}-chat"}},
            context={"user_id": user},
        )

    def mine(key: str) -> bool:  # alice's keys; the registry and the directory are shared
        shared = ("{st:}", "{dir:}")
        return any(p in key for p in ("{alice}", "{cp:alice-chat}", "memories/alice/", *shared))

    def directory() -> dict[bytes, float]:
        client = redis.Redis.from_url(memory.redis_url or "")
        key = memory.history.keys.directory_key()  # type: ignore[attr-defined]
        return dict(client.zscan_iter(key))

    others_before = {k: v for k, v in scan_dump(memory).items() if not mine(k)}
    listed_before = directory()
    with Console(memory) as console:
        page.goto(console.url + "/user?u=alice")
        page.get_by_label("type the user id to confirm").fill("alic")  # a typo erases nothing
        page.get_by_role("button", name="Forget everything").click()
        assert "Type the user id exactly" in page.locator("#error").inner_text()
        assert memory.get_user_tags("alice") == {"name": "alice"}
        page.goto(console.url + "/user?u=alice")
        page.get_by_label("type the user id to confirm").fill("alice")
        page.get_by_role("button", name="Forget everything").click()
        removed = page.locator("#removed").inner_text()
        assert "threads 1" in removed and "store_items 1" in removed and "history 4" in removed
    after = scan_dump(memory)
    # SCAN finds none of the user's keys, the app's thread and store items included
    assert not [k for k in after if mine(k) and not any(p in k for p in ("{st:}", "{dir:}"))]
    assert not [k for k, v in after.items() if b"alice-4711" in (v or b"")]
    assert {k: v for k, v in after.items() if not mine(k)} == others_before
    # the console's directory: alice's entry went, every other entry is as it was
    assert directory() == {m: at for m, at in listed_before.items() if m != b"alice"}
    assert ("memories", "alice") not in memory.store().list_namespaces()
    assert ("memories", "alice2") in memory.store().list_namespaces()
    # and off the embedded server's files (the erasure rewrote them)
    assert memory.data_dir is not None
    on_disk = [p for p in memory.data_dir.rglob("*") if p.is_file()]
    assert not [p for p in on_disk if b"alice-4711" in p.read_bytes()]
    assert [p for p in on_disk if b"alice2-4711" in p.read_bytes()]


def test_stored_markup_renders_as_text_and_runs_nothing(memory: TieredMemory, page: Any) -> None:
    evil = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    memory.add_summaries("mallory", [evil])
    memory.add_session_log("mallory", [HumanMessage(evil), AIMessage("ok")])
    with Console(memory) as console:
        page.goto(console.url + "/user?u=mallory")
        assert evil in page.locator("#items").inner_text()
        assert evil in page.locator("#history").inner_text()
        assert page.locator("#items img").count() == 0 and page.locator("main script").count() == 0
        page.goto(console.url + "/user/playground?u=mallory&turns=" + "alert")
        page.wait_for_load_state("load")
    assert page.dialogs == []


def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(
    memory: TieredMemory, page: Any
) -> None:
    memory.set_user_tags("alice", {"age": 30})
    with Console(memory) as console:
        page.goto(console.url + "/user?u=alice")
        # the page's own form, its token removed: as a forged cross-site form would be
        page.evaluate("document.querySelectorAll('input[name=csrf]').forEach(e => e.remove())")
        page.get_by_label("new value of age").fill("99")
        page.locator("tr[data-tag=age]").get_by_role("button", name="Save").click()
        assert "CSRF" in page.content()
        # with the token but from another origin
        response = page.request.post(
            console.url + "/user/tags",
            form={"u": "alice", "name": "age", "value": "98", "action": "set", "csrf": "x"},
            headers={"Origin": "http://evil.example"},
        )
        assert response.status == 403
    assert memory.get_user_tags("alice") == {"age": "30"}


def test_read_only_mode_shows_no_form_and_refuses_posts(memory: TieredMemory, page: Any) -> None:
    memory.set_user_tags("alice", {"age": 30})
    with Console(memory, read_only=True) as console:
        page.goto(console.url + "/user?u=alice")
        assert page.locator("form[method=post]").count() == 0
        assert page.locator(".badge").inner_text() == "read-only"
        response = page.request.post(console.url + "/user/forget", form={"u": "alice"})
        assert response.status == 403
    assert memory.get_user_tags("alice") == {"age": "30"}


def test_with_a_token_the_console_needs_it(memory: TieredMemory, page: Any) -> None:
    memory.set_user_tags("alice", {"age": 30})
    token = "s3cret-token-0123456789"
    with Console(memory, token=token) as console:
        assert page.goto(console.url + "/").status == 401
        assert page.goto(console.url + "/?token=wrong").status == 401
        page.goto(console.url + f"/?token={token}")  # trades it for a cookie
        assert "?token" not in page.url and page.locator("h1").inner_text() == "Users"
        assert page.goto(console.url + "/user?u=alice").status == 200
        # the cookie is a session of this process, never the token (issue 43 item 11):
        # cookies ignore ports, so every server on this host name receives it
        cookies = page.context.cookies()
        assert cookies and all(token not in c["value"] for c in cookies)


def test_ids_a_form_cannot_carry_round_trip_through_every_form(
    memory: TieredMemory, page: Any
) -> None:
    """Issue 43 item 8: a browser sends a line feed in a form as CR LF and NUL as U+FFFD;
    the console's forms carry ids encoded, so a tag, a thread erasure and the user's
    erasure reach the same user, not another or none."""
    odd, thread = "ann\nsmith", "t\n1"
    memory.add_session_log(odd, [HumanMessage("hi"), AIMessage("hello")], thread_id=thread)
    memory.set_user_tags(odd, {"name": "Ann"})
    memory.set_user_tags("ann\r\nsmith", {"name": "Other"})  # what CR LF would reach
    with Console(memory) as console:
        page.goto(console.url + "/user?" + urlencode({"u": quote(odd, safe="")}))
        # shown with its escape: a line feed would read as a space (issue 55 item 15)
        assert page.locator("#user-id").inner_text() == "ann\\nsmith"
        page.locator("#add-tag").get_by_label("value").fill("31")
        page.locator("#add-tag").get_by_label("tag").select_option("age")
        page.locator("#add-tag").get_by_role("button", name="Set tag").click()
        assert memory.get_user_tags(odd) == {"name": "Ann", "age": "31"}
        page.get_by_role("button", name="Forget this thread").click()
        assert memory.load_context(odd) != []  # asked first
        question = page.locator("#confirm-question").inner_text().split()
        assert question[:6] == ["Forget", "the", "thread", "t", "1", "of"]
        page.get_by_role("button", name="Forget the thread").click()
        assert memory.load_context(odd) == []
        assert "Thread forgotten: 2 messages" in page.locator("#notice").inner_text()
        typed = page.locator("#confirm-text").inner_text()
        assert typed == "ann%0Asmith"
        page.get_by_label("type the user id to confirm").fill(typed)
        page.get_by_role("button", name="Forget everything").click()
        assert page.locator("#removed").is_visible()
    assert memory.get_user_tags(odd) == {}
    assert memory.get_user_tags("ann\r\nsmith") == {"name": "Other"}


def test_a_link_cannot_forge_the_consoles_notice(memory: TieredMemory, page: Any) -> None:
    """Issue 43 item 19: only a notice the console signed is shown as its status line."""
    memory.set_user_tags("alice", {"age": 30})
    with Console(memory) as console:
        page.goto(console.url + "/user?u=alice&notice=Your+data+was+deleted.+Call+555")
        assert page.locator("#notice").count() == 0
        page.locator("tr[data-tag='age']").get_by_label("new value of age").fill("31")
        page.locator("tr[data-tag='age']").get_by_role("button", name="Save").click()
        assert page.locator("#notice").inner_text() == "tag age saved"


def test_a_non_loopback_bind_without_a_token_refuses_to_start(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "langchain_tiered_memory.cli", "ui", "--host", "0.0.0.0"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIERED_MEMORY_DATA_DIR": str(tmp_path / "d")}
    env.pop("TIERED_MEMORY_CONSOLE_TOKEN", None)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "--token" in done.stderr and "0.0.0.0" in done.stderr
    assert not (tmp_path / "d").exists()  # refused before anything was opened


def test_tiered_memory_ui_prints_its_address_and_serves(tmp_path: Path) -> None:
    port = _free_port()
    command = [sys.executable, "-m", "langchain_tiered_memory.cli", "ui", "--port", str(port)]
    command += ["--data-dir", str(tmp_path / "d"), "--embeddings", "hashing"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert f"http://127.0.0.1:{port}/" in line, line
        store = proc.stderr.readline()  # which store it reads (issue 46 item 4)
        assert store.strip() == f"reading: embedded server, data dir {tmp_path / 'd'}", store
        import urllib.request

        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as reply:
                    assert "Users" in reply.read().decode()
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(30)
    # SIGTERM ends the command as Ctrl-C does: the embedded server it started is shut down
    assert proc.returncode != 0 and not EmbeddedRedis(tmp_path / "d").server_alive()


def test_a_wrong_age_is_found_by_its_value_and_one_item_among_many_by_its_words(
    memory: TieredMemory, page: Any
) -> None:
    """Issue 46 item 1, in clicks: 8 users in English and Chinese, one with a wrong age
    among them; before, finding it meant opening every user (16 clicks)."""
    people = [("ann", "Ann Lee", 31), ("bo", "Bo Chen", 45), ("cy", "Cy Diaz", 28)]
    people += [("dee", "Dee Ray", 52), ("wf", "王芳", 28), ("lm", "李明", 33)]
    people += [("zq", "张强", 61), ("ed", "Ed Moss", 132)]  # ed's age is wrong
    for user, name, age in people:
        memory.set_user_tags(user, {"name": name, "age": age})
        memory.add_session_log(user, [HumanMessage(f"Hi, I am {name}."), AIMessage("Hello!")])
    for start in range(0, 300, 100):  # a page and more of ann's notes
        memory.add_summaries(
            "ann", [f"The user read book number {n}." for n in range(start, start + 100)]
        )
    memory.add_summaries("ann", ["The user's sister lives in Lisbon."])
    clicks = 0
    with Console(memory) as console:
        page.goto(console.url + "/")
        assert "8 users" in page.locator("#user-count").inner_text()
        page.get_by_label("search users").fill("132")
        page.get_by_role("button", name="Search").click()
        clicks += 1
        assert page.locator("#users tbody tr").count() == 1
        page.get_by_role("link", name="ed", exact=True).click()
        clicks += 1
        row = page.locator("tr[data-tag='age']")
        row.get_by_label("new value of age").fill("23")
        row.get_by_role("button", name="Save").click()
        clicks += 1
        assert memory.get_user_tags("ed")["age"] == "23"
        assert clicks == 3

        # one item among 301: its words, one search
        page.goto(console.url + "/user?u=ann")
        page.get_by_label("find items").fill("lisbon")
        page.get_by_role("button", name="Find").click()
        rows = page.locator("#items tbody tr")
        assert rows.count() >= 1 and "Lisbon" in rows.first.inner_text()
        assert "text" in rows.first.locator("td.found").inner_text()
        shot(page, "find")
