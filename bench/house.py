"""Counts of the package's shape, for the house issues' before/after tables.

Prints: modules; abstract methods of the store bases; hand-written sync/async pairs (a
class body that defines both ``name`` and ``aname`` as functions, per folder); generated
pairs (``aname = name.aio``); pipelines built outside ``backend/connection.py``; the
facade's lines and methods.

    python bench/house.py
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "langchain_tiered_memory"
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


def main() -> None:
    """Print the table."""
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
    facade_lines = sum(len(p.read_text().splitlines()) for p in facade)
    print("| measure | count |")
    print("|---|---:|")
    print(f"| modules | {len(modules)} |")
    print(f"| abstract methods of the three store bases | {abstract} |")
    print(f"| hand-written sync/async pairs | {sum(hand.values())} |")
    for folder, count in sorted(hand.items()):
        if count:
            print(f"| ... in {folder}/ | {count} |")
    once = sum(generated.values())
    print(f"| pairs written once (`name.aio`, `twin(name)`, `threaded(name)`) | {once} |")
    print(f"| pipelines built outside backend/connection.py | {pipelines} |")
    print(f"| facade modules (memory/) | {len(facade)} |")
    print(f"| facade lines (memory/, without opening.py's) | {facade_lines} |")


if __name__ == "__main__":
    main()
