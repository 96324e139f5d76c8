"""The README's first screen is what a newcomer needs, not the options (issue 79): a
newcomer read the first example's comment on ``small_model`` and a paragraph of nine
options as jargon before needing any of them.
"""

from __future__ import annotations

import re
from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _first_example_and_paragraph() -> tuple[str, str]:
    example = re.search(r"^```python\n(.*?)^```\n", README, flags=re.DOTALL | re.MULTILINE)
    assert example is not None
    paragraph = README[example.end() :].strip().split("\n\n", 1)[0]
    return example.group(1), paragraph


def test_the_first_example_names_no_option_it_does_not_pass() -> None:
    example, _ = _first_example_and_paragraph()
    comments = " ".join(re.findall(r"#\s*(.*)", example))
    assert "small_model" not in comments and "guards" not in comments


def test_the_paragraph_after_it_lists_no_options() -> None:
    _, paragraph = _first_example_and_paragraph()
    options = re.findall(r"`([a-z_]+)(?:=[^`]*)?`", paragraph)
    # the user id and the app's own tools, which the example and an app need: no more
    assert len(set(options) - {"user_id", "tools"}) <= 1, options
