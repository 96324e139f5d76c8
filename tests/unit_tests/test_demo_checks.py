"""The demo's (and the benches') answer check: a reply passes only if it *states* the fact."""

from __future__ import annotations

import pytest

from langchain_tiered_memory.cli.demo import _MAY_8
from langchain_tiered_memory.language.text import answer_states


@pytest.mark.parametrize(
    ("reply", "ok"),
    [
        ("You are 30 years old.", True),
        ("30", True),
        ("You are 300 years old.", False),
        ("Are you 30?", False),
        ('{"name": "user_tag", "arguments": {"age": 30}}', False),
        ("user_tag(age=30)", False),
        ('<tool_call>\n{"name": "user_tag", "arguments": {"age": 30}}\n</tool_call>', False),
        ("I don't know how old you are; 30 maybe.", False),
        ("你今年30岁。", True),
    ],
)
def test_an_age_answer_must_state_the_number(reply: str, ok: bool) -> None:
    assert answer_states(reply, "30") is ok


@pytest.mark.parametrize(
    ("reply", "ok"),
    [
        ("Your birthday is on May 8.", True),
        ("It's the 8th of May!", True),
        ("I don't know; is it May 8?", False),
        ("Is your birthday on May 8?", False),
        ('{"birthday": "May 8"}', False),
        ("Your birthday is on May 18.", False),
    ],
)
def test_a_birthday_answer_must_state_the_date(reply: str, ok: bool) -> None:
    assert answer_states(reply, _MAY_8) is ok
