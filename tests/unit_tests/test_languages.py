"""A language is one record (issue 48 item 4): every language-aware module reads the records
in ``language/records/``, Spanish was added as one module there, and a language added as one
more module (Esperanto, below, written by this test into a copy of the package) reaches
every door: tag capture, the package's replies, dates, summarize requests, first person,
stop words, the summarizer's language."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

import langchain_tiered_memory
from langchain_tiered_memory import TieredMemory, create_memory_graph
from langchain_tiered_memory.agent.capture import SUMMARIZE_NOTE, summary_reply
from langchain_tiered_memory.agent.replies import no_reply
from langchain_tiered_memory.language.attribution import is_request, stated_tags
from langchain_tiered_memory.language.registry import language_of, languages
from langchain_tiered_memory.language.text import (
    asks_to_summarize,
    is_first_person,
    is_question,
    said_item,
    script_of,
    tokenize,
)
from langchain_tiered_memory.retrieval.time import parse_time_windows
from langchain_tiered_memory.summarization.summarizer import in_language, user_language
from langchain_tiered_memory.testing import ScriptedChatModel

PACKAGE = Path(langchain_tiered_memory.__file__).parent
NOW = datetime(2026, 12, 4, tzinfo=timezone.utc)


def ask(graph: Any, text: str, thread: str) -> str:
    result = graph.invoke(
        {"messages": [HumanMessage(text)]},
        context={"user_id": "lucia"},
        config={"configurable": {"thread_id": thread}},
    )
    return str(result["messages"][-1].content)


# ----- Spanish, the record added in one module -----


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Me llamo Lucía y tengo treinta y dos años.", "es"),
        ("¿Cuántos años tengo?", "es"),
        ("My son lives in Lyon.", "en"),
        ("我叫李明，今年28岁。", "zh"),
        ("私の名前は田中です", "ja"),
        ("Hello", "en"),
    ],
)
def test_the_language_of_a_text(text: str, code: str) -> None:
    assert language_of(text).code == code


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hola, me llamo Lucía y tengo treinta y dos años.", {"name": "Lucía", "age": 32}),
        ("Soy Lucía.", {"name": "Lucía"}),
        ("Tengo 40 años.", {"age": 40}),
        ("Mi hermana tiene 28 años.", {}),  # someone else's age
        ("Tengo 3 hijos.", {}),  # not an age
        ("Soy profesora.", {}),  # not a name
        ("No me llamo Ana.", {}),  # denied
        ("Si tengo 50 años, me jubilo.", {}),  # not a present fact
    ],
)
def test_spanish_statements_about_the_user(text: str, expected: dict[str, Any]) -> None:
    assert stated_tags(text, ["name", "age"]) == expected


def test_a_small_model_in_spanish_records_and_answers_in_spanish(memory_factory: Any) -> None:
    memory: TieredMemory = memory_factory()
    # the model answers with text and no call: the package records what the user stated
    model = ScriptedChatModel(replies=["¡Hola!"])
    graph = create_memory_graph(
        model, memory=memory, small_model=True, checkpointer=InMemorySaver()
    )
    reply = ask(graph, "Hola, me llamo Lucía y tengo treinta y dos años.", thread="t1")
    assert reply == "Entendido, lo recordaré (edad: 32, nombre: Lucía)."
    assert memory.get_user_tags("lucia") == {"name": "Lucía", "age": "32"}
    calls = len(model.prompts)
    assert ask(graph, "¿Cuántos años tengo?", thread="t2") == "Tienes 32 años."
    assert ask(graph, "¿Cómo me llamo?", thread="t2") == "Te llamas Lucía."
    assert len(model.prompts) == calls  # answered from the tags, exact


def test_spanish_replies_of_the_package() -> None:
    human = HumanMessage("Por favor, resume nuestra conversación.")
    call = AIMessage(
        content=SUMMARIZE_NOTE, tool_calls=[{"name": "summarize", "args": {}, "id": "s"}]
    )
    report = ToolMessage('Stored 1 memory item:\n- "El usuario vive en Madrid."', tool_call_id="s")
    reply = summary_reply([human, call, report])
    assert reply is not None
    assert reply.content == 'De acuerdo, guardé 1 recuerdos:\n- "El usuario vive en Madrid."'
    nothing = ToolMessage("Nothing new to store.", tool_call_id="s")
    reply = summary_reply([human, call, nothing])
    assert reply is not None and reply.text.startswith("Nada nuevo")
    empty = no_reply([HumanMessage("¿Qué tiempo hace?"), AIMessage("")])
    assert empty.text.startswith("Lo siento")
    assert no_reply([HumanMessage("What now?"), AIMessage("")]).text.startswith("Sorry")


def test_spanish_dates() -> None:
    def days(query: str) -> list[tuple[Any, ...]]:
        return [(w.start, w.end, w.month, w.day) for w in parse_time_windows(query, NOW)]

    may_8 = datetime(2023, 5, 8, tzinfo=timezone.utc).timestamp()
    assert days("¿Qué pasó el 8 de mayo de 2023?") == [(may_8, may_8 + 86400, None, None)]
    assert days("¿Qué hice en marzo?") == [(None, None, 3, None)]
    yesterday = datetime(2026, 12, 3, tzinfo=timezone.utc).timestamp()
    assert days("¿Qué te conté ayer?") == [(yesterday, yesterday + 86400, None, None)]
    [ago] = parse_time_windows("¿Qué hicimos hace tres semanas?", NOW)
    assert ago.start is not None and ago.end is not None
    assert ago.start < NOW.timestamp() - 21 * 86400 < ago.end
    assert parse_time_windows("¿Qué te gusta comer?", NOW) == []


def test_spanish_words_at_every_other_door() -> None:
    assert asks_to_summarize("¿Puedes resumir nuestra conversación?")
    assert is_first_person("Vivo en Madrid con mi gato.")
    assert is_question("¿Cuántos años tengo?")
    assert is_request("Por favor, traduce esto.") and not is_request("Recuerda que soy vegana.")
    assert said_item("Vivo en Madrid.") == "El usuario dijo: Vivo en Madrid."
    assert user_language([HumanMessage("Vivo en Madrid y trabajo de enfermera.")]) == "Spanish"
    assert in_language(["El usuario vive en Madrid.", "El usuario es enfermera."], "Spanish")
    assert not in_language(["The user lives in Madrid."], "Spanish")
    # one language's function words, never all: Spanish "son" is English "son"
    assert tokenize("la casa de mi hermana") == ["casa", "hermana"]
    assert "son" in tokenize("My son lives in Lyon.")


# ----- a language added as one module reaches every door -----

ESPERANTO = '''
"""Esperanto, added by a test as one module."""

from langchain_tiered_memory.language.record import (
    DateGrammar,
    Language,
    LanguageRules,
    Replies,
)

LANGUAGE = Language(
    code="eo",
    name="Esperanto",
    order=25,
    markers=r"\\b(?:mi|mia|estas|kaj|havas|jarojn|kiom|nomo|kio|vi|la)\\b",
    rules=LanguageRules(
        name="eo",
        cues={"name": (r"\\bmia nomo estas",), "age": (r"\\bmi havas",)},
        value_after={"age": r"\\s*(?:jarojn\\b|[.,!?]|$)", "name": r"(?:\\W|$)"},
        self_subject=r"\\bmi\\b",
    ),
    first_person=r"\\b(?:mi|mia|min)\\b",
    question_end=r"\\bĉu\\b[^.!]*",
    summarize_request=r"\\bresumu\\b",
    tag_questions={"age": r"\\bkiom da jaroj mi havas\\b", "name": r"\\bkio estas mia nomo\\b"},
    replies=Replies(
        tag_answers={"age": "Vi havas {value} jarojn.", "name": "Via nomo estas {value}."},
        recorded="Bone, mi memoros ({facts}).",
        tag_labels={"age": "aĝo", "name": "nomo"},
    ),
    said="La uzanto diris: ",
    the_user="La uzanto",
    stopwords=frozenset({"la", "kaj", "mi", "estas", "de"}),
    dates=DateGrammar(
        patterns=(("relative", r"\\b(?P<rel>hieraŭ)\\b"),),
        hint=r"hieraŭ",
        relative={"hieraŭ": ("day", 1)},
    ),
    numbers=lambda text: text.replace("tridek", "30"),
)
'''

CHECKS = """
from datetime import datetime, timezone
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_tiered_memory.agent.capture import CAPTURE_NOTE, capture_reply, tag_answer
from langchain_tiered_memory.language.attribution import stated_tags
from langchain_tiered_memory.language.registry import language_of
from langchain_tiered_memory.language.text import (
    asks_to_summarize, is_first_person, is_question, said_item, tokenize,
)
from langchain_tiered_memory.retrieval.time import parse_time_windows
from langchain_tiered_memory.summarization.summarizer import user_language

said = "Saluton! Mia nomo estas Zamenhof kaj mi havas tridek jarojn."
assert language_of(said).code == "eo", language_of(said).code
assert stated_tags(said, ["name", "age"]) == {"name": "Zamenhof", "age": 30}
tags = {"name": "Zamenhof", "age": "30"}
answer = tag_answer([HumanMessage("Kiom da jaroj mi havas?")], tags)
assert answer is not None and answer.content == "Vi havas 30 jarojn.", answer
call = AIMessage(CAPTURE_NOTE, tool_calls=[{"name": "user_tag", "args": tags, "id": "c"}])
done = capture_reply([HumanMessage(said), call, ToolMessage("ok", tool_call_id="c")])
assert done is not None and done.content == "Bone, mi memoros (aĝo: 30, nomo: Zamenhof).", done
assert asks_to_summarize("Bonvolu resumu nian konversacion")
assert is_first_person("Mi loĝas en Parizo.")
assert is_question("Ĉu vi memoras min")
home = "Mi loĝas en Parizo kaj mi havas katon."
assert said_item(home) == "La uzanto diris: " + home
assert user_language([HumanMessage("Mi loĝas en Parizo kaj mi havas katon.")]) == "Esperanto"
assert tokenize("la kato de mia frato") == ["kato", "mia", "frato"]
now = datetime(2026, 12, 4, tzinfo=timezone.utc)
assert [w.start for w in parse_time_windows("Kion mi diris hieraŭ?", now)] == [
    datetime(2026, 12, 3, tzinfo=timezone.utc).timestamp()
]
print("every door")
"""


def _check_every_door(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHECKS)],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_language_added_as_one_module_reaches_every_door(tmp_path: Path) -> None:
    copy = tmp_path / "langchain_tiered_memory"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    module = copy / "language" / "records" / "esperanto.py"
    module.write_text(ESPERANTO, encoding="utf-8")
    run = _check_every_door(tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "every door" in run.stdout
    # and without the module, none of it (the checks are not vacuous)
    module.unlink()
    run = _check_every_door(tmp_path)
    assert run.returncode != 0 and "AssertionError" in run.stderr


def test_a_module_of_the_records_that_defines_no_language_is_an_error(tmp_path: Path) -> None:
    from langchain_tiered_memory.language.registry import discover

    package = tmp_path / "some_records"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "empty.py").write_text("X = 1\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import some_records  # type: ignore[import-not-found]

        with pytest.raises(TypeError, match="defines no language"):
            discover(some_records)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("some_records", None)
        sys.modules.pop("some_records.empty", None)


# ----- and language data stays in the records -----

# A model's prompt quotes one example of a language; the recorded answers were given to
# these exact words, so they stay as they are.
PROMPT_EXAMPLES = {("agent/memory_query.py", "用户")}


def _words_outside_latin(text: str) -> list[str]:
    """Runs of two or more letters of scripts other than Latin: words of a language."""
    runs, run = [], ""
    for char in text:
        script = script_of(char)
        if script is not None and script != "latin":
            run += char
            continue
        if len(run) >= 2:
            runs.append(run)
        run = ""
    return runs + ([run] if len(run) >= 2 else [])


def test_no_module_outside_the_records_holds_words_of_a_language() -> None:
    """Comments and docstrings may quote any language; code may not (English excepted: it
    cannot be told from identifiers here, and the Esperanto test covers the mechanism)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("language/records/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                docstrings.add(id(node.value))  # attribute docstrings too
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
            ):
                for word in _words_outside_latin(node.value):
                    if not any(
                        relative == where and word in example for where, example in PROMPT_EXAMPLES
                    ):
                        found.append(f"{relative}:{node.lineno}: {word}")
    assert found == [], "language data belongs in language/records/: " + ", ".join(found)


def test_the_records_are_read_in_their_order_english_first() -> None:
    codes = [language.code for language in languages()]
    assert codes[:3] == ["en", "zh", "es"]
    assert len(set(codes)) == len(codes)
