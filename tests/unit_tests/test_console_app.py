"""The console app's guards and listings without a browser (Starlette's test client over
the embedded server): issue 43 items 13, 17, 18 and 20. The browser tests
(tests/integration_tests/test_console_browser.py) cover what needs a real browser.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from support import raw_client

from langchain_tiered_memory import HashingEmbeddings, TieredMemory, create_memory_graph
from langchain_tiered_memory.testing import ScriptedChatModel

pytest.importorskip("starlette", reason="the [ui] extra is part of the test install")
from starlette.testclient import TestClient  # noqa: E402

from langchain_tiered_memory.console import create_app  # noqa: E402
from langchain_tiered_memory.console.views import THREADS_PER_PAGE  # noqa: E402


def _client(memory: TieredMemory, host: str = "127.0.0.1", **options: Any) -> TestClient:
    return TestClient(create_app(memory, host=host, **options), base_url=f"http://{host}")


def test_a_user_whose_every_turn_failed_is_listed(embedded_memory: TieredMemory) -> None:
    """Item 13: the provider was down for every turn; the thread holds the message."""
    memory = embedded_memory
    graph: Any = create_memory_graph(
        ScriptedChatModel(replies=[RuntimeError("provider down")]),
        memory=memory,
        checkpointer=memory.checkpointer(),
    )
    with pytest.raises(RuntimeError):
        graph.invoke(
            {"messages": [HumanMessage("hello?")]},
            {"configurable": {"thread_id": "t-failed"}},
            context={"user_id": "unlucky"},
        )
    page = _client(memory).get("/")
    assert page.status_code == 200 and "unlucky" in page.text
    assert "t-failed" in _client(memory).get("/user?u=unlucky").text


def test_the_user_page_lists_threads_a_page_at_a_time(embedded_memory: TieredMemory) -> None:
    """Item 17: 20,001 threads made a 9.5 MB page."""
    memory = embedded_memory
    for i in range(THREADS_PER_PAGE + 5):
        memory.history.record_thread("many", f"thread-{i:03d}")
    client = _client(memory)
    first = client.get("/user?u=many").text
    assert first.count("Forget this thread") == THREADS_PER_PAGE
    assert f"({THREADS_PER_PAGE + 5})" in first and "more threads" in first
    second = client.get(f"/user?u=many&toffset={THREADS_PER_PAGE}").text
    assert second.count("Forget this thread") == 5 and "thread-054" in second


def test_the_recall_playground_does_not_restart_the_users_clock(data_dir: Path) -> None:
    """Item 18: an inspection in a --read-only console is a read, not user activity."""
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(), user_ttl=3600) as memory:
        memory.add_summaries("ann", ["Ann failed her driving test."])
        memory.set_user_tags("ann", {"name": "Ann"})
        raw = raw_client(memory.redis_url or "")
        try:
            key = memory.tags.key("ann")  # type: ignore[attr-defined]
            raw.pexpire(key, 60_000)
            page = _client(memory, read_only=True).get(
                "/user/playground", params={"u": "ann", "turns": "my exam"}
            )
            assert page.status_code == 200 and "driving test" in page.text
            assert raw.pttl(key) <= 60_000
        finally:
            raw.close()


@pytest.mark.parametrize("host", ["127.0.0.2", "127.1.2.3"])
def test_a_console_on_another_loopback_address_serves_its_own_host(
    embedded_memory: TieredMemory, host: str
) -> None:
    """Item 20; a name other than localhost is still refused (DNS rebinding)."""
    client = _client(embedded_memory, host=host)
    assert client.get("/", headers={"host": f"{host}:8766"}).status_code == 200
    assert client.get("/", headers={"host": "evil.example:8766"}).status_code == 400


def test_details_a_person_notices(embedded_memory: TieredMemory) -> None:
    """Issue 46 item 4: an unknown id says so (no editable empty page), a missing page is
    the console's own 404 with a way home, and the export is named after the user."""
    memory = embedded_memory
    memory.set_user_tags("李明", {"age": 30})
    client = _client(memory)
    unknown = client.get("/user?u=nobody")
    assert unknown.status_code == 404
    assert "No memory for this user" in unknown.text and "<form" not in unknown.text
    assert client.get("/user?u=nobody&new=1").status_code == 200  # adding memory for them
    missing = client.get("/no/such/page")
    assert missing.status_code == 404
    assert 'id="home"' in missing.text and "tiered-memory console" in missing.text
    assert missing.headers["content-security-policy"]  # the console's headers, as any page
    # which store the console reads, on every page; dates as a person reads them
    assert f"reading: embedded server, data dir {memory.data_dir}" in missing.text
    memory.add_summaries("李明", ["李明喜欢下棋。"], created_at="2026-12-03T18:48:00+00:00")
    page = client.get("/user?u=%E6%9D%8E%E6%98%8E").text
    assert '<time datetime="2026-12-03T18:48:00+00:00"' in page and "3 Dec 2026, 18:48 UTC" in page
    exported = client.get("/user/export?u=%E6%9D%8E%E6%98%8E")
    disposition = exported.headers["content-disposition"]
    assert 'filename="memory-__.json"' in disposition
    assert "filename*=UTF-8''memory-%E6%9D%8E%E6%98%8E.json" in disposition


def test_the_users_page_shows_each_users_name_tag(memory: TieredMemory) -> None:
    """Issue 46 item 4: finding a user meant opening each one; the name tag is listed,
    read in the directory's one round trip (embedded) or from the tags (in memory)."""
    memory.set_user_tags("u-17", {"name": "王芳", "age": 28})
    memory.set_user_tags("u-18", {"age": 40})  # no name: an empty cell
    page = _client(memory).get("/").text
    row = page[page.index("u-17") :]
    assert '<td class="name">王芳</td>' in row[: row.index("</tr>")]
    row = page[page.index("u-18") :]
    assert '<td class="name"></td>' in row[: row.index("</tr>")]


def _rows(html: str) -> list[str]:
    """The item ids of the items table, in order."""
    import re

    table = html.split('id="items"', 1)[1].split("</table>", 1)[0]
    return re.findall(r'data-item="([^"]+)"', table)


def test_a_users_items_are_found_by_text_by_meaning_by_thread_and_date(
    memory: TieredMemory,
) -> None:
    """Issue 46 item 1: one item among many, without paging through them."""
    memory.add_summaries("s", ["The user is 31 years old."], created_at="2025-01-05")
    memory.add_summaries("s", ["用户今年三十一岁。"], created_at="2025-02-05")
    memory.add_summaries(
        "s",
        ["The user's birthday is March 5."],
        created_at="2025-03-05",
        metadata={"threads": ["t9"]},
    )
    for i in range(150):  # more than a page of distractors
        memory.add_summaries("s", [f"The user planted tree number {i} in the garden."])
    ids = {d.page_content: str(d.id) for d in memory.summaries.get_all("s")}
    client = _client(memory)

    found = client.get("/user", params={"u": "s", "find": "YEARS old"}).text
    rows = _rows(found)
    assert rows[0] == ids["The user is 31 years old."]  # the text match first
    assert "text" in found.split(rows[0], 2)[2].split("</td>", 2)[1]
    assert len(rows) <= 1 + 20 and 'id="found"' in found

    # by meaning: no text match, the best of a search by the recall's own ranking
    page = client.get("/user", params={"u": "s", "find": "how old am I"}).text
    assert _rows(page)[0] == ids["The user is 31 years old."]
    assert "meaning 0." in page and 'class="found">text' not in page

    by_thread = _rows(client.get("/user", params={"u": "s", "thread": "t9"}).text)
    assert by_thread == [ids["The user's birthday is March 5."]]
    by_date = client.get("/user", params={"u": "s", "since": "2025-02-01", "until": "2025-02-28"})
    assert _rows(by_date.text) == [ids["用户今年三十一岁。"]]
    assert "1 of 153 items found" in by_date.text

    # a malformed date narrows nothing; the page still shows every item, a page at a time
    unfiltered = client.get("/user", params={"u": "s", "since": "yesterday"}).text
    assert len(_rows(unfiltered)) == 100 and 'id="found"' not in unfiltered


def test_the_pager_keeps_the_search(memory: TieredMemory) -> None:
    for i in range(130):
        memory.add_summaries("p", [f"The user visited museum {i}."], created_at="2025-05-01")
    memory.add_summaries("p", ["The user visited a zoo."], created_at="2024-01-01")
    first = _client(memory).get("/user", params={"u": "p", "since": "2025-01-01"}).text
    assert len(_rows(first)) == 100 and "older →" in first
    older = first.split("older →")[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    second = _client(memory).get(older).text
    assert len(_rows(second)) == 30 and "zoo" not in second


def test_the_playground_explains_any_item_recalled_or_not(memory: TieredMemory) -> None:
    """Issue 46 item 3: rank, score parts and why it was cut, for an item a person picks."""
    memory.add_summaries("x", ["The user failed the driving test in March."])
    (old,) = memory.summaries.add("x", ["The user lives in Paris."])
    memory.summaries.add("x", ["The user lives in Berlin."], supersedes={0: [old]})
    for i in range(8):
        memory.add_summaries("x", [f"The user baked bread number {i}."])
    docs = {d.page_content: str(d.id) for d in memory.summaries.get_all("x")}
    client = _client(memory)

    def why(item: str, k: int = 1) -> str:
        params: dict[str, str | int] = {"u": "x", "turns": "the driving test", "k": k, "why": item}
        page = client.get("/user/playground", params=params).text
        return page.split('id="explained"', 1)[1].split("</div>", 1)[0]

    recalled = why(docs["The user failed the driving test in March."])
    assert "Recalled at #1 of 1, and in the memory section" in recalled
    assert "place by score" in recalled and "dense" in recalled
    assert "Superseded by item " + docs["The user lives in Berlin."] in why(
        docs["The user lives in Paris."]
    )
    assert "Not recalled: below 1" in why(docs["The user baked bread number 3."])
    assert "has no item with id" in why("no-such-id")
    # a one-line query's ranks are the places, not 0 for every row
    page = client.get("/user/playground", params={"u": "x", "turns": "bread", "k": 3}).text
    table = page.split('id="recalled"', 1)[1]
    assert [c.split("</td>")[0] for c in table.split("<td>")[9::10][:3]] == ["0", "1", "2"]


def test_the_users_page_counts_sorts_by_activity_and_finds_tag_values(
    memory: TieredMemory,
) -> None:
    """Issue 46 item 1: a person finds a user by a tag value, the recently active first."""
    memory.set_user_tags("u-1", {"name": "Ann Lee", "age": 31})
    memory.set_user_tags("u-2", {"name": "王芳", "age": 28})
    memory.add_session_log("u-1", [HumanMessage("hi")])
    client = _client(memory)
    page = client.get("/").text
    assert "2 users" in page
    assert page.index("u-1") < page.index("u-2")  # u-1 spoke last
    found = client.get("/", params={"q": "王芳"}).text
    assert "u-2" in found and "u-1" not in found.split('id="users"', 1)[1]


def test_the_explanation_ranks_the_turns_the_playground_recalled_with(
    memory: TieredMemory,
) -> None:
    """The playground recalls with the turns a graph turn reads; its explanation must
    rank the same query, or an item recalled first reads as placed lower by score."""
    from langchain_tiered_memory.console import views

    memory.add_summaries("y", ["The user spent a week in Lisbon eating custard tarts."])
    for i in range(6):
        memory.add_summaries("y", [f"The user repaired bicycle number {i}."])
    turns = [
        "Lisbon custard tarts",
        "Lisbon tarts",
        "Lisbon custard",
        "bicycle",
        "bicycle repaired",
    ]
    shown = views.playground(memory, "y", turns, 3)
    assert shown.turns == turns[-3:]  # the graph's recall_context_turns
    first = shown.recalled[0]
    explained = views.explain(memory, "y", turns, 3, str(first.id), shown)
    assert explained.verdict.startswith("Recalled at #1")


def test_the_explanation_places_an_item_in_the_latest_messages_ranking_by_words(
    memory: TieredMemory,
) -> None:
    """Issue 70 item 5: recall finds the latest message's own best item by its words, so
    the explanation says where an item is in that ranking, not in an embedding's."""
    from langchain_tiered_memory.console import views

    ielts, bees = "The user scored 7.5 on the IELTS.", "The user keeps bees on the roof."
    memory.add_summaries("y", [ielts, bees])
    ids = {d.page_content: str(d.id) for d in memory.summaries.get_all("y")}
    turns = ["bees are busy", "honey season", "What did I score on the IELTS?"]
    shown = views.playground(memory, "y", turns, 2)
    assert views.explain(memory, "y", turns, 2, ids[ielts], shown).latest == 0
    # it shares no word with the latest message: not in that ranking at all
    assert views.explain(memory, "y", turns, 2, ids[bees], shown).latest is None


@pytest.mark.parametrize("n_turns", [1, 3, 5])
def test_the_playground_shows_what_a_graph_turn_recalls(memory: TieredMemory, n_turns: int) -> None:
    """Issue 57 item 5: the playground read every typed line while the graph reads the last
    three, so with five turns it showed other memories than a real turn."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_tiered_memory import create_memory_graph
    from langchain_tiered_memory.console import views
    from langchain_tiered_memory.testing import ScriptedChatModel

    texts = [
        "The user spent a week in Lisbon eating custard tarts.",
        "The user failed the driving test in March.",
        "The user keeps bees on the roof.",
        "The user's sister Emma lives in Lyon.",
        "The user repaired an old bicycle.",
    ]
    memory.add_summaries("y", texts)
    turns = ["Lisbon was lovely", "my driving exam", "bees again", "Emma called", "bike"]
    turns = turns[-n_turns:]
    model = ScriptedChatModel(replies=["ok"])
    graph = create_memory_graph(model, memory=memory, checkpointer=InMemorySaver())
    for text in turns:
        graph.invoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": "t"}},
            context={"user_id": "y"},
        )
    seen = model.prompts[-1][0].text  # the last turn's system prompt
    shown = views.playground(memory, "y", turns, 3)
    assert shown.section and shown.section in seen


def test_a_hand_typed_id_opens_that_user_and_odd_ids_look_odd(memory: TieredMemory) -> None:
    """Issue 55 item 15: ``?u=100%41off`` opened user "100Aoff" (decoded twice); ids with
    a NUL, a line feed or surrounding spaces displayed as ordinary names."""
    from langchain_tiered_memory.console.app import form_id, from_form

    memory.set_user_tags("100%41off", {"name": "Percent"})
    memory.set_user_tags("100Aoff", {"name": "Other"})
    client = _client(memory)
    page = client.get("/user?u=100%2541off").text  # what a person types: the id as shown
    assert "Percent" in page and "Other" not in page
    for odd in ("a\x00b", "line\nfeed", " padded ", "a%20b", "100%41off"):
        assert from_form(form_id(odd)) == odd  # what the pages carry comes back as it was
    memory.set_user_tags(" ann ", {"name": "Spaced"})
    memory.set_user_tags("ann", {"name": "Plain"})
    listing = client.get("/").text
    assert "“ ann ”" in listing
    memory.set_user_tags("nul\x00id", {"name": "Nul"})
    assert "nul\\x00id" in client.get("/").text


def test_find_says_how_many_items_hold_the_words(memory: TieredMemory) -> None:
    """Issue 57 item 5: Find said "20 of 300 items found" both for a word one item holds
    and for a word none does: meaning matches are shown as such."""
    memory.add_summaries("z", ["The user carries an EpiPen for a peanut allergy."])
    memory.add_summaries("z", [f"The user went hiking on trail {i} near Lyon." for i in range(30)])
    client = _client(memory)
    page = client.get("/user?u=z&find=EpiPen").text
    assert "1 of 31 items hold “EpiPen”" in page
    page = client.get("/user?u=z&find=zeppelin").text
    assert "No item holds “zeppelin”" in page
    assert "items found" not in page


def test_a_user_whose_memory_is_only_in_the_langgraph_store_is_listed(
    embedded_memory: TieredMemory,
) -> None:
    """Issue 55 item 11: a user with memory only in the memory's LangGraph store
    (LangMem's layout) was not listed and their page said "No memory for this user"."""
    store = embedded_memory.store()
    store.put(("memories", "lena"), "m1", {"content": "Lena is allergic to penicillin."})
    client = _client(embedded_memory)
    assert ">lena<" in client.get("/").text
    assert ">lena<" in client.get("/?q=len").text
    page = client.get("/user?u=lena").text
    assert 'id="store-items"' in page and "No memory" not in page


def test_the_history_count_is_what_is_kept_after_a_thread_is_forgotten(
    embedded_memory: TieredMemory,
) -> None:
    """A forgotten thread's messages leave their positions (the watermark reads them), not
    their text: the page said "8 messages" with four of them forgotten."""
    memory = embedded_memory
    for thread in ("keep", "drop"):
        memory.add_session_log(
            "ann",
            [HumanMessage(f"{thread} one"), HumanMessage(f"{thread} two")],
            thread_id=thread,
        )
    memory.forget_thread("ann", "drop")
    page = _client(memory).get("/user?u=ann").text
    assert "2 kept of 4 written" in " ".join(page.split())
    assert "drop one" not in page and "keep two" in page


def test_every_store_only_user_is_listed_past_langgraphs_page_of_100(
    embedded_memory: TieredMemory,
) -> None:
    """Issue 66 item 16: one list_namespaces call at LangGraph's default limit of 100: the
    101st user was neither listed nor found."""
    from langchain_tiered_memory.console.views import store_users

    store = embedded_memory.store()
    for i in range(105):
        store.put(("memories", f"u{i:03d}"), "m", {"content": f"note {i}"})
    assert store_users(embedded_memory) == [f"u{i:03d}" for i in range(105)]
    page = _client(embedded_memory).get("/user?u=u104").text
    assert 'id="store-items"' in page and "No memory" not in page
