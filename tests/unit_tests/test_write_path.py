"""What memory keeps, in any language (issue 9): a capable model is trusted, a weak one is
guarded, recall reads Chinese and Japanese, time words work in Chinese too."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.errors import SummarizationError
from langchain_tiered_memory.language.registry import language_of
from langchain_tiered_memory.language.text import (
    is_first_person,
    is_question,
    said_item,
    tokenize,
)
from langchain_tiered_memory.retrieval import parse_time_windows
from langchain_tiered_memory.summarization.summarizer import (
    char_grams,
    clean_items,
    is_grounded,
    states_a_fact,
    summarize_messages,
)
from langchain_tiered_memory.testing import ScriptedChatModel

DATA = Path(__file__).parent / "data"


def _items_call(*items: str) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": "SummaryItems", "args": {"items": list(items)}, "id": "s"}]
    )


# The way ChatOpenAI answers: paraphrases, in the user's language.
CAPABLE = [
    pytest.param(
        ["I don't eat meat, and my sister Emma lives in Lyon."],
        ["The user does not eat meat.", "The user's sister Emma lives in Lyon."],
        id="en-paraphrase",
    ),
    pytest.param(
        ["我叫李明，今年三十岁，生日是五月八日。我喜欢下围棋。"],
        ["用户名叫李明，今年三十岁。", "用户的生日是五月八日。", "用户喜欢下围棋。"],
        id="zh-seed",
    ),
    pytest.param(
        ["私は田中です。東京に住んでいて、猫を二匹飼っています。"],
        [
            "ユーザーの名前は田中です。",
            "ユーザーは東京に住んでいる。",
            "ユーザーは猫を二匹飼っている。",
        ],
        id="ja",
    ),
    pytest.param(
        ["Ich heiße Jonas und arbeite seit März als Krankenpfleger in Köln."],
        ["Der Nutzer heißt Jonas.", "Der Nutzer ist Krankenpfleger in Köln, seit März."],
        id="de",
    ),
]


@pytest.mark.parametrize(("said", "items"), CAPABLE)
def test_a_capable_models_items_are_kept_in_any_language(said: list[str], items: list[str]) -> None:
    model = ScriptedChatModel(replies=[_items_call(*items)])
    messages = [HumanMessage(s) for s in said]
    assert summarize_messages(model, messages) == items


@pytest.mark.parametrize(("said", "items"), CAPABLE)
def test_every_capable_item_is_stored_and_recalled(
    memory_factory: Any, said: list[str], items: list[str]
) -> None:
    memory: TieredMemory = memory_factory()
    memory.add_session_log("u", [HumanMessage(s) for s in said])
    ids = memory.summarize_history("u", ScriptedChatModel(replies=[_items_call(*items)]))
    assert len(ids) == len(items)
    assert sorted(d.page_content for d in memory.summaries.get_all("u")) == sorted(items)


@pytest.mark.parametrize(
    ("said", "item"),
    [
        # an abstraction into words the user never said: true here, and the same form as
        # the 15 facts a real model wrote when there was nothing to summarize
        (["I don't eat meat."], "The user is vegetarian."),
        (["I live in Paris."], "The user works as a software engineer."),
        (["I live in Paris."], "The user has a friend named Jack who lives in Paris."),
        (["I work as a nurse at the hospital."], "Emma is a nurse at the hospital."),
        (["我住在上海。"], "用户是一名软件工程师。"),
        (["我的生日是十月三日。"], "用户的生日是十月五日。"),
    ],
)
def test_an_item_the_user_did_not_say_is_not_stored(
    memory: TieredMemory, said: list[str], item: str
) -> None:
    """For every model (issue 65 item 1): a name, a number or most of the words of a
    sentence the user never said (the capable model's own items were stored before)."""
    memory.add_session_log("u", [HumanMessage(s) for s in said])
    assert memory.summarize_history("u", ScriptedChatModel(replies=[_items_call(item)])) == []
    assert memory.summaries.get_all("u") == []


def test_form_validation_drops_what_is_not_an_item() -> None:
    candidates = [
        "",
        "  ",
        "ok",  # too short
        "x" * 301,
        "12345 67890",  # no letter
        42,
        None,
        "Write each fact as one short self-contained sentence in the third person",
        "Assistant: Nice to meet you, Alice!",  # the assistant's line echoed
        "User: My birthday is on May 8.",  # the user's line echoed: kept as their words
        "The user's birthday is on May 8.",
        "the user's birthday is on may 8.",  # a duplicate, case aside
        "用户喜欢茶。",  # short is fine in Chinese
    ]
    assert clean_items(candidates) == [
        "The user said: My birthday is on May 8.",
        "The user's birthday is on May 8.",
        "用户喜欢茶。",
    ]


def test_no_more_than_twenty_items() -> None:
    assert len(clean_items([f"The user has hobby number {i}." for i in range(30)])) == 20


# --------------------------------------------------------------------------- small models


def _recorded() -> list[dict[str, Any]]:
    return json.loads((DATA / "smollm2_summaries.json").read_text())["conversations"]


@pytest.mark.parametrize("conversation", _recorded(), ids=lambda c: c["user"][:12])
def test_recorded_smollm2_junk_is_rejected_in_small_model_mode(
    conversation: dict[str, Any],
) -> None:
    kept = clean_items(conversation["candidates"], conversation["user"])
    # only the user's own words survive (echoed as "User: ..."), quoted as theirs, never
    # the fragments, the assistant's chatter or the invented wedding date
    for item in kept:
        said = language_of(item).said or ""
        assert item.startswith(said), item
        assert item.removeprefix(said) in conversation["user"], item
    junk = [c for c in conversation["candidates"] if not c.startswith("User:")]
    assert clean_items(junk, conversation["user"]) == []


def test_small_model_mode_refuses_the_capable_models_abstraction() -> None:
    # the price of the guard, and why it is off for capable models
    model = ScriptedChatModel(replies=[_items_call("The user is vegetarian.")])
    with pytest.raises(SummarizationError):
        summarize_messages(model, [HumanMessage("I don't eat meat.")], grounded=True)


@pytest.mark.parametrize(
    ("item", "source", "grounded"),
    [
        ("The user's birthday is on May 8.", "My birthday is on May 8.", True),
        ("用户的生日是五月八日。", "我的生日是五月八日。", True),
        ("The user: The user:", "My birthday is on May 8.", False),
        ("Alice", "I am Alice.", False),  # a fragment
        ("用户喜欢下围棋。", "我喜欢喝茶。", False),
        ("I moved to Paris. The wedding is on April 15.", "I moved to Paris.", False),
    ],
)
def test_grounding_is_by_character_ngrams(item: str, source: str, grounded: bool) -> None:
    assert is_grounded(item, source) is grounded


def test_char_grams_fold_case_width_and_punctuation() -> None:
    assert char_grams("ＴＥＡ!") == char_grams("tea") == {"tea"}
    assert {"生日", "生日是"} <= char_grams("生日是")


# --------------------------------------------------------------------------- language


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I am 30 years old.", True),
        ("我叫李明，今年三十岁。", True),
        ("私は田中です。", True),
        ("Ich heiße Jonas.", True),
        ("Je m'appelle Luc et j'ai 40 ans.", True),
        ("Mi nombre es Ana.", True),
        ("Меня зовут Иван.", True),
        ("제 이름은 민수입니다.", True),
        ("How old am I?", False),
        ("我多大了？", False),
        ("我的生日是哪天吗", False),
        ("Please summarize our conversation.", False),
        ("The weather is nice.", False),
        ("", False),
    ],
)
def test_the_forced_capture_trigger_is_not_english_only(text: str, expected: bool) -> None:
    assert states_a_fact(text) is expected


def test_first_person_words_need_word_boundaries() -> None:
    assert not is_first_person("Meeting Imogen at the museum, Emily said.")
    assert is_first_person("Emily met me.") and is_first_person("Mine is blue.")
    assert is_question("本当ですか")


def test_cjk_is_tokenized_into_characters_and_bigrams_like_lucene() -> None:
    assert tokenize("用户的生日") == ["用", "户", "的", "生", "日", "用户", "户的", "的生", "生日"]
    assert tokenize("猫") == ["猫"]
    assert tokenize("東京に住む")[-4:] == ["東京", "京に", "に住", "住む"]
    # the unigrams let a one-character word match: 几岁 / 二十八岁 share only 岁
    assert set(tokenize("我几岁？")) & set(tokenize("用户今年二十八岁。")) == {"岁"}
    assert tokenize("Paintings in Köln") == ["paint", "köln"]  # no stemming of non-ASCII


def test_chinese_recall_finds_the_birthday_among_other_items(memory_factory: Any) -> None:
    memory: TieredMemory = memory_factory(embeddings=HashingEmbeddings())
    noise = [f"用户在第{i}次旅行中去了一个新的城市，拍了很多照片。" for i in range(30)]
    memory.add_summaries("li", [*noise, "用户的生日是五月八日。", "用户喜欢下围棋。"])
    hits = memory.recall_summaries("li", "我的生日是哪天？", n=3)
    assert "用户的生日是五月八日。" in [d.page_content for d in hits]


NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)


def _day(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, timezone.utc).date().isoformat()


@pytest.mark.parametrize(
    ("query", "window"),
    [
        ("我的生日是5月8日吗？", (None, None, 5, 8)),
        ("五月八日", (None, None, 5, 8)),
        ("2023年5月8日我在哪", ("2023-05-08", "2023-05-09", None, None)),
        ("2023年5月", ("2023-05-01", "2023-06-01", None, None)),
        ("去年", ("2025-01-01", "2026-01-01", None, None)),
        ("上周我做了什么", ("2026-11-17", "2026-12-02", None, None)),
        ("三天前", ("2026-11-27", "2026-11-30", None, None)),
        ("昨天", ("2026-11-30", "2026-12-01", None, None)),
        ("我十二月二十三日有空", (None, None, 12, 23)),
    ],
)
def test_chinese_time_words(query: str, window: tuple[Any, ...]) -> None:
    (got,) = parse_time_windows(query, NOW)
    assert (_day(got.start), _day(got.end), got.month, got.day) == window


@pytest.mark.parametrize("query", ["我多大了？", "我喜欢什么", "13月45日"])
def test_chinese_text_without_a_date_names_no_window(query: str) -> None:
    assert parse_time_windows(query, NOW) == []


# --------------------------------------------------------------------------- updates


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_tag_history_keeps_every_change_with_its_thread(
    memory_factory: Any, mode: str
) -> None:
    memory: TieredMemory = memory_factory()
    memory.set_user_tags("u", {"name": "Ann", "age": 30}, thread_id="t1")
    memory.set_user_tags("u", {"age": 30})  # unchanged: not a change
    memory.set_user_tags("u", {"age": 31}, thread_id="t2")
    memory.set_user_tags("bob", {"age": 50})
    if mode == "sync":
        ages = memory.get_tag_history("u", "age")
    else:
        ages = await memory.aget_tag_history("u", "age")
    assert [(c["value"], c["previous"], c["thread_id"]) for c in ages] == [
        ("30", None, "t1"),
        ("31", "30", "t2"),
    ]
    assert ages[0]["changed_at"] <= ages[1]["changed_at"]
    assert memory.get_user_tags("u") == {"name": "Ann", "age": "31"}  # the current value
    assert [c["tag"] for c in memory.export_user("u")["tag_history"]] == ["name", "age", "age"]
    memory.forget_user("u")
    assert memory.get_tag_history("u", "age") == []
    assert [c["value"] for c in memory.get_tag_history("bob", "age")] == ["50"]


def test_the_user_tag_tool_records_the_thread(embedded_memory: TieredMemory) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_tiered_memory.agent.graph import create_memory_graph

    call = AIMessage("", tool_calls=[{"name": "user_tag", "args": {"age": 31}, "id": "a"}])
    graph = create_memory_graph(
        ScriptedChatModel(replies=[call, "ok"]),
        memory=embedded_memory,
        checkpointer=InMemorySaver(),
    )
    graph.invoke(
        {"messages": [HumanMessage("I turned 31.")]},
        {"configurable": {"thread_id": "birthday-thread"}},
        context={"user_id": "ann"},
    )
    (change,) = embedded_memory.get_tag_history("ann", "age")
    assert change["value"] == "31" and change["thread_id"] == "birthday-thread"


def _thread_turn(memory: TieredMemory, thread: str, text: str, position: int) -> None:
    memory.add_session_log(
        "u",
        [
            HumanMessage(text, id=f"{thread}-{position}"),
            AIMessage("ok", id=f"{thread}-a{position}"),
        ],
        thread_id=thread,
        thread_position=position,
    )


def _echo(messages: list[Any]) -> AIMessage:
    said = [m.text for m in messages[1:] if isinstance(m, HumanMessage)]
    lines = said[0].split("\n") if said else []
    # the user's lines as items: stored as their words ("The user said: I live in Berlin.")
    facts = [line.removeprefix("User: ") for line in lines if line.startswith("User: ")]
    return _items_call(*facts)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_forget_thread_removes_the_thread_and_what_came_only_from_it(
    memory_factory: Any, mode: str
) -> None:
    memory: TieredMemory = memory_factory()
    _thread_turn(memory, "a", "I live in Berlin.", 0)
    _thread_turn(memory, "b", "I work as a nurse.", 0)
    memory.summarize_history("u", ScriptedChatModel(replies=[_echo]))  # spans a and b
    _thread_turn(memory, "b", "I have a cat named Tom.", 2)
    memory.summarize_history("u", ScriptedChatModel(replies=[_echo]))  # only b
    _thread_turn(memory, "a", "I like tea.", 2)
    before = {
        d.page_content.removeprefix(said_item("")): d.metadata
        for d in memory.summaries.get_all("u")
    }
    assert before["I have a cat named Tom."]["source_threads"] == ["b"]
    # one batch read both threads; each item records its own (issue 43 item 6)
    assert before["I live in Berlin."]["source_threads"] == ["a"]
    assert before["I work as a nurse."]["source_threads"] == ["b"]

    if mode == "sync":
        removed = memory.forget_thread("u", "b")
    else:
        removed = await memory.aforget_thread("u", "b")
    assert removed == {"messages": 4, "summaries": 2, "checkpoints": 0}
    assert [m.text for m in memory.history.since("u", 0)[1]] == [
        "I live in Berlin.",
        "ok",
        "I like tea.",
        "ok",
    ]
    left = sorted(d.page_content for d in memory.summaries.get_all("u"))
    assert left == [said_item("I live in Berlin.")]  # what came from a alone stays
    assert memory.history.threads("u") == ["a"]
    # positions kept: the next summary starts after the forgotten messages
    memory.summarize_history("u", ScriptedChatModel(replies=[_echo]))
    assert said_item("I like tea.") in [d.page_content for d in memory.summaries.get_all("u")]
    assert memory.summaries.get_watermark("u") == memory.history.length("u") == 8
    assert memory.forget_thread("u", "b")["messages"] == 0  # nothing twice


def test_forget_thread_leaves_no_key_of_the_thread(embedded_memory: TieredMemory) -> None:
    from support import raw_client

    memory = embedded_memory
    _thread_turn(memory, "gone", "My secret is 42.", 0)
    _thread_turn(memory, "kept", "I like tea.", 0)
    memory.forget_thread("u", "gone")
    client = raw_client(memory.redis_url or "")
    dump = b"".join(
        b"".join(client.dump(k) or b"" for k in [key]) for key in client.scan_iter(count=1000)
    )
    client.close()
    assert b"secret" not in dump and b"gone" not in dump
    assert b"kept" in dump


def _decide(*decisions: dict[str, Any]) -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[{"name": "NoteDecisions", "args": {"decisions": list(decisions)}, "id": "d"}],
    )


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_an_update_supersedes_the_old_item_and_keeps_it(
    memory_factory: Any, mode: str
) -> None:
    memory: TieredMemory = memory_factory()
    (berlin,) = memory.add_summaries("u", ["The user lives in Berlin."], created_at="2026-03-01")
    memory.add_summaries("u", ["The user has a cat named Tom."], created_at="2026-03-01")
    memory.add_session_log("u", [HumanMessage("I moved to Paris last week."), AIMessage("Nice!")])
    model = ScriptedChatModel(
        replies=[
            _items_call("The user lives in Paris."),
            _decide({"note": 0, "action": "supersedes", "stored_id": berlin}),
        ]
    )
    if mode == "sync":
        (paris,) = memory.summarize_history("u", model)
    else:
        (paris,) = await memory.asummarize_history("u", model)
    # the update step was shown the stored item most like the new one
    shown = model.prompts[1][-1].text
    assert "The user lives in Paris." in shown and f'id="{berlin}"' in shown

    recalled = [d.page_content for d in memory.recall_summaries("u", "Where does the user live?")]
    assert "The user lives in Paris." in recalled and "The user lives in Berlin." not in recalled
    every = memory.recall_summaries("u", "Where does the user live?", include_superseded=True)
    old = next(d for d in every if d.id == berlin)
    assert old.metadata["superseded_by"] == paris
    assert (
        old.metadata["valid_until"]
        == next(d for d in every if d.id == paris).metadata["created_at"]
    )
    exported = {s["text"]: s for s in memory.export_user("u")["summaries"]}
    assert exported["The user lives in Berlin."]["superseded_by"] == paris
    assert "superseded_by" not in exported["The user lives in Paris."]
    snap = memory.load("u", "Where do I live?", k=3)
    assert "The user lives in Berlin." not in [d.page_content for d in snap.recalled]


@pytest.mark.parametrize(
    "answer",
    [
        "I cannot decide.",  # no tool call
        AIMessage("", tool_calls=[{"name": "NoteDecisions", "args": {"x": 1}, "id": "d"}]),
        _decide({"note": 0, "action": "supersedes", "stored_id": "999"}),  # not shown
        _decide({"note": 7, "action": "duplicate", "stored_id": "0"}),  # no such note
        RuntimeError("provider down"),
    ],
    ids=["text", "bad-args", "unknown-id", "unknown-note", "raises"],
)
def test_an_unusable_update_answer_stores_the_item_as_new(memory_factory: Any, answer: Any) -> None:
    memory: TieredMemory = memory_factory()
    memory.add_summaries("u", ["The user lives in Berlin."])
    memory.add_session_log("u", [HumanMessage("I moved to Paris."), AIMessage("Nice!")])

    def decide(_: Any) -> Any:
        if isinstance(answer, Exception):
            raise answer
        return answer

    model = ScriptedChatModel(replies=[_items_call("The user lives in Paris."), decide])
    assert len(memory.summarize_history("u", model)) == 1
    recalled = [d.page_content for d in memory.recall_summaries("u", "lives", n=5)]
    assert sorted(recalled) == ["The user lives in Berlin.", "The user lives in Paris."]


def test_a_duplicate_is_not_stored_and_the_watermark_moves(memory_factory: Any) -> None:
    memory: TieredMemory = memory_factory()
    (tea,) = memory.add_summaries("u", ["The user likes green tea."])
    memory.add_session_log("u", [HumanMessage("Green tea is my favourite."), AIMessage("ok")])
    model = ScriptedChatModel(
        replies=[
            _items_call("The user's favourite drink is green tea."),
            _decide({"note": 0, "action": "duplicate", "stored_id": tea}),
        ]
    )
    assert memory.summarize_history("u", model) == []
    assert [d.page_content for d in memory.summaries.get_all("u")] == ["The user likes green tea."]
    assert memory.summaries.get_watermark("u") == 2


def test_near_duplicates_recalled_together_put_the_newer_first(memory_factory: Any) -> None:
    memory: TieredMemory = memory_factory()
    memory.add_summaries("u", ["The user works as a nurse in Lyon."], created_at="2025-01-01")
    memory.add_summaries("u", ["The user works as a nurse in Paris."], created_at="2026-06-01")
    memory.summaries.retrieval = None
    hits = memory.recall_summaries("u", "the user works as a nurse in Lyon", n=2)
    assert [d.metadata["created_at"][:4] for d in hits] == ["2026", "2025"]


def test_the_memory_section_says_the_newest_note_is_current() -> None:
    from langchain_core.documents import Document

    from langchain_tiered_memory.agent.prompt import render_memory_section

    text = render_memory_section({}, [Document("x", metadata={"created_at": "2026-01-01"})])
    assert "the newest is current" in text


def test_newer_first_orders_every_near_duplicate_pair_and_keeps_the_rest() -> None:
    import numpy as np

    from langchain_tiered_memory.retrieval.fusion import newer_first_order

    # a ranking: a (2024), b (unrelated, 2026), c (a's near-duplicate, 2025),
    # d (a's and c's near-duplicate, 2026)
    epochs = [2024.0, 2026.0, 2025.0, 2026.5]
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.99, 0.141], [0.98, 0.199]])
    similar = vectors @ vectors.T >= 0.85
    assert newer_first_order(epochs, similar) == [3, 2, 0, 1]  # d, c, a; b stays after a
    assert newer_first_order(epochs[1:2], similar[1:2, 1:2]) == [0]
