"""Counts of the package's shape, for the house issues' before/after tables.

Prints: modules; abstract methods of the store bases; hand-written sync/async pairs (a
class body that defines both ``name`` and ``aname`` as functions, per folder); generated
pairs (``aname = name.aio``); pipelines built outside ``backend/connection.py``; the
facade's lines and methods; the conformance suite's tests per contract method; and a
warm turn's load at 10,000 items, in memory and on the embedded server.

    python bench/house.py                    # this checkout
    python bench/house.py --compare 411ec09  # and an earlier revision, side by side
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# the package measured: this checkout's, or (the --compare child) an earlier revision's
PACKAGE = Path(os.environ.get("HOUSE_PACKAGE", ROOT / "langchain_tiered_memory"))
STORE_BASES = {
    "stores/history/base.py": "HistoryStore",
    "stores/summaries/base.py": "SummaryStore",
    "stores/tags.py": "TagStore",
}


def _functions(cls: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {
        node.name: node
        for node in cls.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def _generated(cls: ast.ClassDef) -> int:
    """``aname = name.aio``, ``twin(name)`` and ``threaded(name)`` lines: a pair written once."""
    count = 0
    for node in cls.body:
        if isinstance(node, ast.Assign) and (
            (isinstance(node.value, ast.Attribute) and node.value.attr == "aio")
            or (
                isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id in {"twin", "threaded"}
            )
        ):
            count += 1
    return count


def _is_abstract(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        (isinstance(d, ast.Name) and d.id == "abstractmethod")
        or (isinstance(d, ast.Attribute) and d.attr == "abstractmethod")
        for d in fn.decorator_list
    )


def _contract(rel: str, name: str) -> list[str]:
    """The public sync methods of a store base: its contract (async twins aside)."""
    tree = ast.parse((PACKAGE / rel).read_text())
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        if cls.name == name:
            return sorted(n for n in _functions(cls) if not n.startswith("_"))
    return []


def _suite_calls() -> Counter[str]:
    """For each ``Base.method``, how many conformance tests call it on the store."""
    fixtures = {"tag_store": "TagStore", "history_store": "HistoryStore"}
    fixtures["summary_store"] = "SummaryStore"
    path = PACKAGE / "testing" / "conformance.py"
    calls: Counter[str] = Counter()
    if not path.exists():
        return calls
    for fn in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_")):
            continue
        seen = set()
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in fixtures
            ):
                name = node.attr[1:] if node.attr.startswith("a") else node.attr
                seen.add(f"{fixtures[node.value.id]}.{name}")
                seen.add(f"{fixtures[node.value.id]}.{node.attr}")
        calls.update(seen)
    return calls


def _load_at(items: int) -> dict[str, float]:
    """p50 ms of a warm ``TieredMemory.load`` (20 messages, top 3 of ``items`` items) on
    the in-memory family and on the embedded server, with the hashing embeddings.
    """
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_tiered_memory import HashingEmbeddings, TieredMemory

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="tm-house-") as tmp:
        for family in ("in memory", "Redis (embedded)"):
            emb = HashingEmbeddings()
            memory = (
                TieredMemory.in_memory(embeddings=emb)
                if family == "in memory"
                else TieredMemory.embedded(tmp, embeddings=emb, appendfsync="no")
            )
            memory.summaries.max_items = None
            texts = [
                f"Item {i}: the user mentioned topic {i % 97} on day {i}." for i in range(items)
            ]
            for i in range(0, items, 2000):
                memory.add_summaries("u", texts[i : i + 2000])
            memory.add_session_log(
                "u", [HumanMessage("I failed my driving test."), AIMessage("Sorry!")]
            )
            query = "Do you remember my exam?"
            for _ in range(5):
                memory.load("u", query, max_messages=20, k=3)
            times = []
            for _ in range(60):
                start = time.perf_counter()
                memory.load("u", query, max_messages=20, k=3)
                times.append((time.perf_counter() - start) * 1000)
            out[family] = sorted(times)[len(times) // 2]
            memory.close()
    return out


def _thread_ids(turns: int = 150) -> dict[str, object]:
    """The id structures one thread keeps (issue 78), after ``turns`` turns of the prebuilt
    graph on the embedded server: ids in the thread's checkpointed state, and the per-thread
    fields of the history's records with how many ids they hold.
    """
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_tiered_memory import HashingEmbeddings, TieredMemory, create_memory_graph
    from langchain_tiered_memory.testing import ScriptedChatModel

    with tempfile.TemporaryDirectory(prefix="tm-house-ids-") as tmp:
        memory = TieredMemory.embedded(tmp, embeddings=HashingEmbeddings(), appendfsync="no")
        graph = create_memory_graph(
            ScriptedChatModel(replies=["Noted."]), memory=memory, checkpointer=InMemorySaver()
        )
        config: Any = {"configurable": {"thread_id": "t1", "user_id": "u"}}
        for i in range(turns):
            graph.invoke({"messages": [HumanMessage(f"m{i}")]}, config, context={"user_id": "u"})
        state = graph.get_state(config).values
        history: Any = memory.history  # the Redis store: its per-thread marks' hash
        fields = history.connection.command("HGETALL", history._records("u")[1])
        memory.close()
    kept = {
        (k.decode() if isinstance(k, bytes) else str(k)).replace("\x00", "+"): v
        for k, v in fields.items()
    }
    entries = sum(len(v.split(b"\x00")) for v in kept.values())
    return {
        "ids in a thread's checkpointed state (saved_ids)": len(state.get("saved_ids") or []),
        "per-thread id structures the history store keeps": ", ".join(sorted(kept)) or "none",
        f"ids those hold after {turns} turns": entries,
    }


def measure(items: int) -> dict[str, object]:
    """Every row of the table, for this checkout's package."""
    modules = sorted(PACKAGE.rglob("*.py"))
    hand: Counter[str] = Counter()
    generated: Counter[str] = Counter()
    pipelines = 0
    for path in modules:
        rel = path.relative_to(PACKAGE).as_posix()
        folder = rel.split("/")[0] if "/" in rel else "(top)"
        text = path.read_text()
        if rel != "backend/connection.py":
            pipelines += text.count(".pipeline(")
        for cls in (n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ClassDef)):
            fns = _functions(cls)
            hand[folder] += sum(1 for name in fns if f"a{name}" in fns)
            generated[folder] += _generated(cls)
    abstract = 0
    for rel, name in STORE_BASES.items():
        tree = ast.parse((PACKAGE / rel).read_text())
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            if cls.name == name:
                abstract += sum(1 for fn in _functions(cls).values() if _is_abstract(fn))
    facade = [
        p
        for p in modules
        if p.parent.name == "memory" and p.name not in ("__init__.py", "opening.py")
    ]
    rows: dict[str, object] = {
        "modules": len(modules),
        "abstract methods of the three store bases": abstract,
        "hand-written sync/async pairs": sum(hand.values()),
        "pairs written once (`name.aio`, `twin(name)`, `threaded(name)`)": sum(generated.values()),
        "pipelines built outside backend/connection.py": pipelines,
        "facade modules (memory/)": len(facade),
        "facade lines (memory/, without opening.py's)": sum(
            len(p.read_text().splitlines()) for p in facade
        ),
    }
    capabilities = PACKAGE / "capabilities.py"
    member = re.compile(r'^    [A-Z_]+ = "', re.MULTILINE)  # the enum's members
    declared = len(member.findall(capabilities.read_text())) if capabilities.exists() else 0
    asked = sum(p.read_text().count("Capability.") for p in modules if p != capabilities)
    rows["capabilities declared"] = declared
    rows["places a capability is asked by name"] = asked
    # a store's kind guessed from its attributes, not asked: getattr on a memory's store
    guessed = re.compile(r"getattr\((memory|self)\.(history|tags|summaries),")
    rows["duck-typed store checks"] = sum(len(guessed.findall(p.read_text())) for p in modules)
    # issue 69 item 5: one turn interface, one judge of a thread's owner
    tiers = (PACKAGE / "tiers.py").read_text()
    rows["per-call branches in tiers.py between the Redis and the per-store turn"] = len(
        re.findall(r"redis is (?:not )?None", tiers)
    )
    storages = [
        cls.name
        for p in modules
        for cls in ast.walk(ast.parse(p.read_text()))
        if isinstance(cls, ast.ClassDef)
        and {"read", "write", "forget"} <= set(_functions(cls))
        and not any(getattr(b, "id", "") == "Protocol" for b in cls.bases)  # the interface
    ]
    rows["turn storages behind one interface (`TurnStorage`)"] = ", ".join(storages) or "none"
    judges = sorted(
        p.relative_to(PACKAGE).as_posix()
        for p in modules
        if "owned_elsewhere(" in p.read_text()
        and not p.name.endswith("_store.py")  # a store's atomic claim, which the judge calls
        and p.name != "base.py"  # where the error is made
    )
    rows["modules that judge who may use a thread"] = (
        f"{len(judges)}: " + ", ".join(judges) if judges else "0"
    )
    # item 6: the agent options' three signatures held to MemoryOptions by a test
    options = 0
    for node in ast.walk(ast.parse((PACKAGE / "agent" / "turn.py").read_text())):
        if isinstance(node, ast.ClassDef) and node.name == "MemoryOptions":
            options = sum(isinstance(n, ast.AnnAssign) for n in node.body)
    checked = (PACKAGE.parent / "tests" / "unit_tests" / "test_options_declared_once.py").exists()
    rows["agent options held to one source (MemoryOptions) by a test"] = (
        f"{options} of {options}" if checked else f"0 of {options}"
    )
    rows.update(_thread_ids())
    # who checks a thread's owner for a saver: the places that ask the one judge
    rows["guard call sites (ThreadGuard(...).admission)"] = sum(
        len(re.findall(r"\.admission\(", p.read_text())) for p in modules
    )
    calls = _suite_calls()
    tests = sum(
        1
        for n in ast.walk(ast.parse((PACKAGE / "testing" / "conformance.py").read_text()))
        if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
    )
    rows["conformance tests"] = tests
    untested = []
    for rel, name in STORE_BASES.items():
        methods = [m for m in _contract(rel, name) if m not in {"session", "as_retriever"}]
        covered = [m for m in methods if calls[f"{name}.{m}"]]
        rows[f"{name}: contract methods a conformance test calls"] = (
            f"{len(covered)} of {len(methods)}"
        )
        untested += [f"{name}.{m}" for m in methods if not calls[f"{name}.{m}"]]
    rows["contract methods no conformance test calls"] = ", ".join(untested) or "none"
    if items:
        for family, ms in _load_at(items).items():
            rows[f"warm load at {items:,} items, {family} (p50 ms)"] = round(ms, 2)
    return rows


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--compare", metavar="REV", help="also measure this git revision")
    p.add_argument("--items", type=int, default=10_000, help="items for the load (0: skip)")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the --compare child
    return p.parse_args()


def main() -> None:
    """Print the table (with ``--compare``, a column per revision)."""
    args = _args()
    rows = measure(args.items)
    if args.json:
        print(json.dumps(rows))
        return
    columns = {"this checkout": rows}
    if args.compare:
        with tempfile.TemporaryDirectory(prefix="tm-house-rev-") as tmp:
            tree = Path(tmp) / "tree"
            git = ["git", "-C", str(ROOT), "worktree"]
            subprocess.run([*git, "add", "-q", "--detach", str(tree), args.compare], check=True)
            try:  # the earlier revision's package, measured by this script
                package = tree / "langchain_tiered_memory"
                env = {**os.environ, "PYTHONPATH": str(tree), "HOUSE_PACKAGE": str(package)}
                argv = [sys.executable, __file__, "--json", "--items", str(args.items)]
                child = subprocess.run(argv, env=env, check=True, capture_output=True, text=True)
                before = json.loads(child.stdout.strip().splitlines()[-1])
                columns = {args.compare: before, **columns}
            finally:
                subprocess.run([*git, "remove", "--force", str(tree)], check=True)
    names = list(columns)
    print("| measure | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for key in rows:
        print(f"| {key} | " + " | ".join(str(columns[n].get(key, "-")) for n in names) + " |")


if __name__ == "__main__":
    main()
