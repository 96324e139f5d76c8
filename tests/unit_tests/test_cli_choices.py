"""A mistyped command lists the commands a user may run, not the hidden ``demo-step``
(issue 79: a newcomer's ``tiered-memory chta`` listed it)."""

from __future__ import annotations

import pytest

from langchain_tiered_memory.cli import build_parser


@pytest.mark.parametrize("typed", ["chta", "demo-stp", "Chat"])
def test_a_mistyped_command_lists_the_visible_commands(
    typed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([typed])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"invalid choice: {typed!r}" in err
    assert "'chat'" in err and "'demo'" in err and "'export'" in err
    assert "demo-step" not in err


def test_the_hidden_command_still_runs_as_the_demo_runs_it() -> None:
    args = build_parser().parse_args(["demo-step", "2"])
    assert args.command == "demo-step" and args.step == 2
