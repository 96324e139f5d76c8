"""Where a small model's summary drops a fact, the user's own sentence is kept (issue 79
item 2), and a capable model's summary is left as it wrote it.

``tiered-memory chat`` with the default SmolLM2-135M: "My birthday is on March 5 and I live
in Lyon." and "I work as a nurse at the hospital." were summarized at ``/quit`` as one item,
"They work at the hospital. Their birthday is March 5th." (3 runs of 3): Lyon and "nurse"
were in nothing, and the next chat could not answer "Where do I live?".
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fakes import ScriptedChatModel, summary_call
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.agent.policy import ModelPolicy
from langchain_tiered_memory.summarization.summarizer import summarize_messages

RECORDED = "They work at the hospital. Their birthday is March 5th."  # SmolLM2, 3 of 3

CONVERSATIONS: dict[str, tuple[list[BaseMessage], str, list[str]]] = {
    # language: the conversation, a lossy answer in the user's language, the facts it drops
    "en": (
        [
            HumanMessage("My birthday is on March 5 and I live in Lyon."),
            AIMessage("Lyon is lovely in spring!"),
            HumanMessage("I work as a nurse at the hospital."),
            AIMessage("That must be demanding work."),
        ],
        RECORDED,
        ["Lyon", "nurse"],
    ),
    "zh": (
        [
            HumanMessage("我的生日是三月五日，我住在里昂。"),
            AIMessage("里昂的春天很美！"),
            HumanMessage("我在医院当护士。"),
            AIMessage("这份工作一定很辛苦。"),
        ],
        "用户的生日是三月五日。",
        ["里昂", "护士"],
    ),
    "es": (
        [
            HumanMessage("Mi cumpleaños es el 5 de marzo y vivo en Lyon."),
            AIMessage("¡Lyon es preciosa en primavera!"),
            HumanMessage("Soy enfermera y trabajo en el hospital."),
            AIMessage("Debe de ser un trabajo exigente."),
        ],
        "El usuario trabaja en el hospital. Su cumpleaños es el 5 de marzo.",
        ["Lyon", "enfermera"],
    ),
}
LABELS = {"en": "The user said: ", "zh": "用户说：", "es": "El usuario dijo: "}
SMALL = ModelPolicy(small=True).summary_options
CAPABLE = ModelPolicy(small=False).summary_options


def _summarize(messages: list[BaseMessage], answer: str, small: bool) -> list[str]:
    options = SMALL if small else CAPABLE
    model = ScriptedChatModel(responses=[summary_call([answer])])
    return summarize_messages(
        model,
        messages,
        extractive_fallback=options["extractive_fallback"],
        grounded=options["grounded"],
    )


@pytest.mark.parametrize("language", CONVERSATIONS)
def test_a_small_models_summary_keeps_every_stated_fact_as_the_users_sentence(
    language: str,
) -> None:
    messages, answer, dropped = CONVERSATIONS[language]
    items = _summarize(messages, answer, small=True)
    for fact in dropped:  # before: in no item
        assert any(fact in item for item in items), (fact, items)
    said = [item for item in items if item.startswith(LABELS[language])]
    assert [item.removeprefix(LABELS[language]) for item in said] == [
        m.text for m in messages if isinstance(m, HumanMessage)
    ]


def test_the_recorded_answer_becomes_the_users_two_sentences() -> None:
    """The recorded item says nothing the user's sentences do not, so it goes."""
    messages, answer, _ = CONVERSATIONS["en"]
    assert _summarize(messages, answer, small=True) == [
        "The user said: My birthday is on March 5 and I live in Lyon.",
        "The user said: I work as a nurse at the hospital.",
    ]


@pytest.mark.parametrize("language", CONVERSATIONS)
def test_a_capable_models_summary_is_left_as_it_wrote_it(language: str) -> None:
    messages, answer, _ = CONVERSATIONS[language]
    assert _summarize(messages, answer, small=False) == [answer]


BOTH = "The user lives in Toulouse and their birthday is on March 5."


@pytest.mark.parametrize(
    ("answer", "kept"),
    [
        # every fact in an item: no sentence is added
        ([BOTH, "The user works as a nurse at the hospital."], None),
        # "nurse" is in no item: that sentence is added, and the item it says all of goes
        (
            [BOTH, "The user works at the hospital."],
            [BOTH, "The user said: I work as a nurse at the hospital."],
        ),
    ],
)
def test_only_a_sentence_with_a_fact_no_item_holds_is_kept(
    answer: list[str], kept: list[str] | None
) -> None:
    messages: list[BaseMessage] = [
        HumanMessage("My birthday is on March 5 and I live in Toulouse."),
        HumanMessage("I work as a nurse at the hospital."),
    ]
    model = ScriptedChatModel(responses=[summary_call(answer)])
    assert summarize_messages(model, messages, grounded=True) == (kept or answer)


def test_questions_requests_and_small_talk_are_not_kept() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("Hi there!"),
        HumanMessage("My birthday is on March 5 and I live in Toulouse. When is my birthday?"),
        HumanMessage("Please summarize our conversation."),
        HumanMessage("Thanks!"),
    ]
    model = ScriptedChatModel(responses=[summary_call([BOTH])])
    assert summarize_messages(model, messages, grounded=True) == [BOTH]


def test_content_units_leave_out_the_speaker_and_the_frame() -> None:
    from langchain_tiered_memory.summarization.uncovered import content_units  # new module

    assert content_units("I live in Lyon.") == content_units("The user lives in Lyon.")
    assert content_units("My birthday is March 5.") == content_units("Their birthday: March 5th")
    assert content_units("我住在里昂。") <= content_units("用户住在里昂。")


@pytest.mark.parametrize(("small", "lyon"), [(True, True), (False, False)])
def test_through_the_memory_with_the_models_policy(
    memory_factory: Callable[..., TieredMemory], small: bool, lyon: bool
) -> None:
    memory = memory_factory()
    messages, answer, _ = CONVERSATIONS["en"]
    memory.add_session_log("nina", messages)
    model = ScriptedChatModel(responses=[summary_call([answer])])
    memory.summarize_history("nina", model, **ModelPolicy(small=small).summary_options)
    stored = [d.page_content for d in memory.recall_summaries("nina", "Where do I live?", 5)]
    assert any("Lyon" in item for item in stored) is lyon, stored


def test_a_fact_whose_item_the_provenance_rule_drops_is_kept_as_said(
    memory_factory: Callable[..., TieredMemory],
) -> None:
    """SmolLM2 live (bench/real_model_turns.py --local, seed-en): the birthday's item held a
    year nobody said, the write path's rule dropped it after the summarizer took the
    birthday as kept, and the birthday was in nothing.
    """
    memory = memory_factory()
    said = [
        HumanMessage("My birthday is on March 5."),
        AIMessage("Noted!"),
        HumanMessage("I failed my driving test in March, it was awful."),
    ]
    memory.add_session_log("ann", said)
    answer = ["The user's birthday is on March 5th, 2024.", "The user failed the driving test."]
    model = ScriptedChatModel(responses=[summary_call(answer)])
    memory.summarize_history("ann", model, **SMALL)
    stored = {d.page_content for d in memory.summaries.get_all("ann")}
    assert "The user said: My birthday is on March 5." in stored, stored
    assert not any("2024" in item for item in stored)


@pytest.mark.parametrize("small", [True, False])
def test_a_spanish_statement_without_a_pronoun_is_kept_in_spanish(small: bool) -> None:
    """Qwen2.5-Coder-1.5B live (bench/real_model_turns.py, update-es): "Vivo en Sevilla."
    was summarized in English twice, and the user's own words, the language rule's fallback,
    held no first person to the Spanish record (the verb says it): nothing was kept.
    """
    messages: list[BaseMessage] = [
        HumanMessage("Vivo en Sevilla."),
        AIMessage("¡Sevilla es preciosa!"),
        HumanMessage("Por favor, resume nuestra conversación."),
    ]
    english = summary_call(["The user lives in Seville."])
    model = ScriptedChatModel(responses=[english, english])
    options = SMALL if small else CAPABLE
    items = summarize_messages(
        model,
        messages,
        extractive_fallback=options["extractive_fallback"],
        grounded=options["grounded"],
    )
    assert items == ["El usuario dijo: Vivo en Sevilla."]


def test_a_report_of_the_conversation_joins_no_fact_of_the_users(
    memory_factory: Callable[..., TieredMemory],
) -> None:
    """Qwen2.5-Coder-1.5B live (bench/real_model_turns.py, three-facts-zh) answered
    ['李明是35岁，来自上海，是一名医生。', '他们讨论了彼此的年龄和职业。', '对话结束。']: the second
    ("they discussed each other's age and job": the two speakers) was joined to the first as
    its pronoun's sentence, the joined item held words the user never said, and the write
    path dropped it: Shanghai and the job were in nothing.
    """
    memory = memory_factory()
    said = [HumanMessage("我叫李明，今年35岁，在上海当医生。"), AIMessage("好的，我记住了。")]
    memory.add_session_log("liming", said)
    memory.set_user_tags("liming", {"name": "李明", "age": "35"})
    recorded = ["李明是35岁，来自上海，是一名医生。", "他们讨论了彼此的年龄和职业。", "对话结束。"]
    model = ScriptedChatModel(responses=[summary_call(recorded)])
    memory.summarize_history("liming", model, **CAPABLE)
    stored = [d.page_content for d in memory.summaries.get_all("liming")]
    assert stored == ["李明是35岁，来自上海，是一名医生。"]
