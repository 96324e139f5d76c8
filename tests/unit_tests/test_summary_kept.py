"""What the user said is kept in their language, and a request is not a fact (issue 79
items 1 and 5), with the answers a real model (Qwen2.5-Coder-1.5B) gave.

1. The summarizer, told to write in Spanish, answered ``["El mes pasado me mudé a
   Valencia.", "Por favor, resume nuestra conversación."]``: the first was relabelled
   ``The user said: El mes pasado ...`` (an English label on a Spanish sentence), the
   language rule dropped it, and the request was stored.
5. "The user asked for a summary of the conversation." was stored and recalled: every word
   is the user's, so the provenance rule passed it; a request is not a fact.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fakes import ScriptedChatModel, summary_call
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.language.text import said_item
from langchain_tiered_memory.summarization.summarizer import clean_items, summarize_messages
from langchain_tiered_memory.summarization.updates import same_attribute

SPANISH = [
    HumanMessage("El mes pasado me mudé a Valencia."),
    AIMessage("¡Qué bien! Valencia es preciosa."),
    HumanMessage("Por favor, resume nuestra conversación."),
]
RECORDED = ["El mes pasado me mudé a Valencia.", "Por favor, resume nuestra conversación."]
SEVILLE = ["El usuario vive en Sevilla."]


def test_the_spanish_move_is_kept_with_the_spanish_label_and_the_request_is_not() -> None:
    # the same answer to the first request and to the request to rewrite in Spanish
    model = ScriptedChatModel(responses=[summary_call(RECORDED), summary_call(RECORDED)])
    items = summarize_messages(model, SPANISH, grounded=True)
    assert items == ["El usuario dijo: El mes pasado me mudé a Valencia."]


@pytest.mark.parametrize(
    ("sentence", "context", "label"),
    [
        # a tie between two languages' markers ("me", "a" are English words too), or none
        # at all, is broken by the language the user writes in
        ("El mes pasado me mudé a Valencia.", "El mes pasado me mudé a Valencia.", "El usuario"),
        ("Me mudé a Valencia.", "Me mudé a Valencia. Hoy hace sol.", "El usuario"),
        ("I moved to Valencia.", "Me mudé. I moved to Valencia.", "The user"),
        ("我搬到了上海。", "我搬到了上海。", "用户"),
    ],
)
def test_a_quoted_sentence_is_labelled_in_its_language(
    sentence: str, context: str, label: str
) -> None:
    assert said_item(sentence, context=context).startswith(label)


@pytest.mark.parametrize(
    "item",
    [
        "The user asked for a summary of the conversation.",
        "The user requested a summary of our conversation.",
        "The user wants the assistant to summarize the chat.",
        "Please summarize our conversation.",
        "The user asked to remember this conversation.",
        "用户要求总结对话。",
        "用户请求总结我们的对话。",
        "请总结一下我们的对话。",
        "El usuario pidió un resumen de la conversación.",
        "Por favor, resume nuestra conversación.",
        "El usuario quiere que recuerde esta conversación.",
    ],
)
def test_an_item_reporting_the_request_to_summarize_is_not_stored(item: str) -> None:
    transcript = f"User: {item}"
    assert clean_items([item], transcript=transcript) == []


@pytest.mark.parametrize(
    "item",
    [
        "The user asked me to remember that they are allergic to peanuts.",
        "The user summarizes legal contracts for a law firm in Lyon.",
        "The user wants a summary of their trip to Japan for their blog.",
        "用户请我记住他对花生过敏。",
        "用户的工作是给律师事务所总结法律合同。",
        "El usuario me pidió recordar que es alérgico a los cacahuetes.",
        "El usuario resume contratos legales para un bufete en Valencia.",
    ],
)
def test_an_item_with_a_fact_beside_a_request_is_kept(item: str) -> None:
    assert clean_items([item]) == [item]


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("El usuario dijo: El mes pasado me mudé a Valencia.", "El usuario dijo: Vivo en Sevilla."),
        ("El usuario se mudó a Valencia.", "El usuario vive en Sevilla."),
        ("The user said: I moved to Valencia last month.", "The user said: I live in Seville."),
        ("用户说：上个月我搬到了上海。", "用户说：我住在北京。"),
    ],
)
def test_the_kept_move_updates_where_the_user_lived(new: str, old: str) -> None:
    """Item 1 went on: "the next thread answered 'vivo en Sevilla' (stale)". A Spanish move
    in the first person ("me mudé") is a change, and Spanish "se" is not the Italian and
    Portuguese "if" ("se") that made every such item a wish.
    """
    assert same_attribute(new, old) == {"home"}


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("El usuario dijo: Si me mudo a Valencia, te aviso.", "El usuario vive en Sevilla."),
        ("L'utente se si trasferisce a Roma.", "L'utente vive a Milano."),
        ("The user's sister moved to Berlin.", "The user lives in Paris."),
    ],
)
def test_a_wish_or_someone_elses_move_updates_nothing(new: str, old: str) -> None:
    assert same_attribute(new, old) == set()


def test_after_the_recorded_answer_the_move_is_current_and_seville_is_not(
    memory_factory: Callable[..., TieredMemory],
) -> None:
    """Item 1 through the memory: the next thread answered "vivo en Sevilla" (stale)."""
    memory = memory_factory()
    memory.add_session_log("ana", [HumanMessage("Vivo en Sevilla."), AIMessage("¡Qué bonito!")])
    memory.summarize_history("ana", ScriptedChatModel(responses=[summary_call(SEVILLE)]))
    memory.add_session_log("ana", SPANISH)
    # the recorded answer, then an update step's answer the package cannot use (stored as
    # new: the words alone make the update)
    model = ScriptedChatModel(responses=[summary_call(RECORDED), AIMessage("")])
    memory.summarize_history("ana", model, grounded=True)
    current = [d.page_content for d in memory.recall_summaries("ana", "¿Dónde vivo?", 5)]
    assert current == ["El usuario dijo: El mes pasado me mudé a Valencia."]
    everything = memory.recall_summaries("ana", "¿Dónde vivo?", 5, include_superseded=True)
    assert {d.page_content for d in everything} == {current[0], *SEVILLE}
