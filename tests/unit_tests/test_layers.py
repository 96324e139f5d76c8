"""What may import what: the parts docs/development.md draws, read from it and enforced.

Every import statement counts, also one inside a function or under ``if TYPE_CHECKING:``
(a lazy import is still a dependency). The table in docs/development.md says which part
each module belongs to and which parts it may import; its "never" lines are checked by
following imports through every module in between (the facade reaching Redis through a
module it imports counts as reaching it).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "langchain_tiered_memory"
NAME = "langchain_tiered_memory"
LAYOUT = PACKAGE.parent / "docs" / "development.md"


def modules(*parts: str) -> list[Path]:
    out: list[Path] = []
    for part in parts:
        target = PACKAGE / part
        out += sorted(target.rglob("*.py")) if target.is_dir() else [target.with_suffix(".py")]
    return out


def module_names(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module under ``package`` by its dotted name (a package by its own name)."""
    names: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def module_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Every module -> the package modules it imports, wherever the import statement is;
    ``from pkg import mod`` is an edge to ``pkg.mod``, not to ``pkg``'s ``__init__``, and
    a relative import is resolved against the module's package."""
    names = module_names(package)
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        base_package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:  # import a.b.c: the deepest module it names
                    parts = alias.name.split(".")
                    while parts and ".".join(parts) not in names:
                        parts.pop()
                    if parts:
                        edges.add(".".join(parts))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = base_package.rsplit(".", node.level - 1)[0]
                    target = f"{base}.{node.module}" if node.module else base
                else:
                    target = node.module or ""
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    edges.add(sub if sub in names else target)
        graph[name] = {e for e in edges if e in names and e != name}
    return graph


def _block_after(heading: str) -> list[str]:
    text = LAYOUT.read_text(encoding="utf-8")
    after = text[text.index(heading) :]
    block = re.search(r"```text\n(.*?)```", after, re.S)
    assert block, f"docs/development.md: no table after {heading!r}"
    return block.group(1).splitlines()


def read_parts() -> dict[str, tuple[list[str], list[str]]]:
    """part -> (what it holds, what it may import), from the table's columns."""
    lines = _block_after("## The parts")
    header = lines[0]
    holds_at, may_at = header.index("holds"), header.index("may import")
    parts: dict[str, tuple[list[str], list[str]]] = {}
    name = ""
    for line in lines[1:]:
        if not line.strip():
            continue
        name = line[:holds_at].strip() or name
        holds, may = parts.setdefault(name, ([], []))
        holds += line[holds_at:may_at].split()
        may += line[may_at:].split()
    return parts


def read_nevers() -> list[tuple[list[str], list[str]]]:
    out = []
    for line in _block_after("And what no part reaches"):
        sources, _, targets = line.removeprefix("never").partition("->")
        out.append((sources.split(), targets.split()))
    return out


PARTS = read_parts()


def _matches(module: str, entry: str) -> bool:
    if entry == "__init__":  # the package's own module, not everything under it
        return module == NAME
    dotted = f"{NAME}.{entry}"
    return module == dotted or module.startswith(dotted + ".")


def part_of(module: str) -> str | None:
    """The part whose longest "holds" entry names the module or a folder above it."""
    best: tuple[int, str] | None = None
    for part, (holds, _) in PARTS.items():
        for entry in holds:
            if _matches(module, entry) and (best is None or len(entry) > best[0]):
                best = (len(entry), part)
    return best[1] if best else None


def named_by(module: str, entries: list[str]) -> bool:
    """Is the module one that ``entries`` (part names, module or folder paths) name?"""
    return any(
        entry == "*" or entry == part_of(module) or _matches(module, entry) for entry in entries
    )


def test_the_table_is_read_and_every_entry_exists() -> None:
    """A misspelt entry would allow nothing or hold nothing: both fail here."""
    names = module_names()
    assert len(PARTS) >= 8 and read_nevers()
    for part, (holds, may) in PARTS.items():
        assert holds, f"part {part} holds nothing"
        for entry in holds + may:
            known = entry in PARTS or entry == "*" or any(_matches(n, entry) for n in names)
            assert known, f"part {part}: {entry!r} is no part, module or folder"
        assert any(part_of(n) == part for n in names), f"part {part} holds no module"


def test_every_module_belongs_to_a_part() -> None:
    loose = sorted(n for n in module_names() if part_of(n) is None)
    assert not loose, f"add them to the table in docs/development.md: {loose}"


def test_every_import_is_one_its_part_may_make() -> None:
    bad = []
    for source, targets in module_graph().items():
        part = part_of(source)
        assert part is not None
        for target in sorted(targets):
            if part_of(target) != part and not named_by(target, PARTS[part][1]):
                bad.append(f"{source} ({part}) -> {target} ({part_of(target)})")
    assert not bad, "imports docs/development.md does not allow:\n" + "\n".join(bad)


def reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


@pytest.mark.parametrize("rule", read_nevers(), ids=lambda r: " ".join(r[0]) + " -> ...")
def test_no_part_reaches_what_it_must_never(rule: tuple[list[str], list[str]]) -> None:
    sources, targets = rule
    graph = module_graph()
    bad = []
    for module in graph:
        if named_by(module, sources) and not named_by(module, targets):
            chain = sorted(m for m in reach(graph, module) if named_by(m, targets))
            bad += [f"{module} reaches {m}" for m in chain]
    assert not bad, bad


def test_the_rules_see_lazy_relative_and_indirect_imports(tmp_path: Path) -> None:
    """The rules would pass vacuously if the parser missed an import: it does not."""
    root = tmp_path / NAME
    for folder in ("stores", "agent", "local", "backend"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("", encoding="utf-8")
    (root / "__init__.py").write_text("", encoding="utf-8")
    (root / "stores" / "probe.py").write_text(
        "def f():\n    from langchain_tiered_memory.local import chat\n"
        "from ..agent import graph\n"
        "import langchain_tiered_memory.backend.opening\n",
        encoding="utf-8",
    )
    for module in ("local/chat.py", "agent/graph.py", "backend/opening.py"):
        (root / module).write_text("", encoding="utf-8")
    (root / "backend" / "keys.py").write_text(
        "from langchain_tiered_memory.backend import opening\n", encoding="utf-8"
    )
    graph = module_graph(root)
    assert graph[f"{NAME}.stores.probe"] == {
        f"{NAME}.local.chat",
        f"{NAME}.agent.graph",
        f"{NAME}.backend.opening",
    }
    assert reach(graph, f"{NAME}.backend.keys") == {f"{NAME}.backend.opening"}


def test_a_forbidden_import_fails_the_rule() -> None:
    """The table check itself: a store importing the graph is reported."""
    store, graph_module = f"{NAME}.stores.tags", f"{NAME}.agent.graph"
    part = part_of(store)
    assert part == "stores" and part_of(graph_module) == "agent"
    assert not named_by(graph_module, PARTS[part][1])


def test_the_facade_builds_no_redis_script_or_command() -> None:
    """memory/ composes the stores; every script and key layout lives below it."""
    for path in modules("memory"):
        source = path.read_text(encoding="utf-8")
        for needle in ("redis.call", ".evalsha(", ".eval(", "pipeline(", "import redis"):
            assert needle not in source, f"{path.name}: {needle}"


def test_a_pipeline_is_built_by_the_connection_only() -> None:
    """Issue 58 item 4: ``backend/connection.py`` is the one place a pipeline is built
    (``pipelined``, ``run_all``): its error translation and cluster handling hold for every
    round trip."""
    connection = PACKAGE / "backend" / "connection.py"
    building = [
        path.relative_to(PACKAGE).as_posix()
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != connection and ".pipeline(" in path.read_text(encoding="utf-8")
    ]
    assert building == []
    assert ".pipeline(" in connection.read_text(encoding="utf-8")


def test_the_layout_names_every_module() -> None:
    """docs/development.md draws the rooms: a module added without a line there fails."""
    layout = LAYOUT.read_text(encoding="utf-8")
    for path in sorted(PACKAGE.iterdir()):
        if path.name.startswith("__") or path.suffix not in (".py", ""):
            continue
        if path.is_dir() and not (path / "__init__.py").exists():
            continue
        name = path.name + "/" if path.is_dir() else path.name
        assert f"  {name}" in layout, f"docs/development.md does not name {name}"


# what a namedtuple offers under a leading underscore: public API, not a private member
_NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make"}


def _private_names_defined(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return {n for n in names if n.startswith("_")}


def test_no_private_member_crosses_a_module_boundary() -> None:
    """``obj._name`` only where ``_name`` is defined in the same module (or ``self``'s):
    a service that needs a member of another module's object gets a public one."""
    found = []
    for path in modules(""):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = _private_names_defined(tree)
        aliases = {
            alias.asname or alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        }
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")):
                continue
            if node.attr.startswith("__") or node.attr in own | _NAMEDTUPLE_API:
                continue
            value = node.value
            if isinstance(value, ast.Name) and value.id in {"self", "cls", *aliases}:
                continue  # one's own member, or a module's
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)}")
        for node in ast.walk(tree):  # ...and no "from other_module import _name"
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE.name):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
                        found.append(f"{where}: from {node.module} import {alias.name}")
    assert not found, found


# The house's limits (issue 35): a module of at most 600 lines, a class of at most 400.
# These are over them today, at the size each had when the limit was set: none may grow,
# none may join the list, and one that gets under the limit leaves it (the test says so).
MODULE_LINES, CLASS_LINES = 600, 400
# Issue 58 item 3 folded the facade's three mixins back into its one module (the reviewer's
# call: one object, read in one place); with every sync/async pair written once it is
# smaller than the four files were (1,034 lines with its bases), and half of it is the
# public API's documentation. It may not grow.
# Issue 76 grew four (erase and drop_thread contract methods with defaults, the read
# refresh rule, attachments per instance): a debt of round seven, not a new allowance.
OVER_MODULES: dict[str, int] = {
    "memory/facade.py": 1011,  # attach(server=...) (#77)
    # a LangGraph server's threads (#77); 684 -> 677: the thread's rule moved out (#78)
    "tiers.py": 677,
}
OVER_CLASSES: dict[str, int] = {"TieredMemory": 904, "Tiers": 432}  # Tiers: #76, #77, #78


def test_no_module_or_class_grows_past_the_limits() -> None:
    modules_seen: dict[str, int] = {}
    classes_seen: dict[str, int] = {}
    for path in modules(""):
        text = path.read_text(encoding="utf-8")
        modules_seen[path.relative_to(PACKAGE).as_posix()] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                classes_seen[node.name] = max(
                    classes_seen.get(node.name, 0), node.end_lineno - node.lineno + 1
                )
    for seen, allowed, limit in (
        (modules_seen, OVER_MODULES, MODULE_LINES),
        (classes_seen, OVER_CLASSES, CLASS_LINES),
    ):
        over = {name: size for name, size in seen.items() if size > limit}
        grown = {n: s for n, s in over.items() if s > allowed.get(n, limit)}
        assert not grown, f"over {limit} lines (split it, see docs/development.md): {grown}"
        mended = sorted(set(allowed) - set(over))
        assert not mended, f"now within {limit} lines: take {mended} off the list"


# Issue 48 item 1: a class counted with its in-package bases (mixins and shared bases
# included, each once), so moving lines into a mixin does not make a concept smaller. These
# are over today, at their size when the rule was set: none may grow or join the list.
OVER_WITH_BASES: dict[str, int] = {
    "AsyncRedisSaver": 1090,  # strip_retired (#67); whose read restarts a thread (#76)
    "AsyncRedisStore": 629,  # SCAN by the connection (662 before)
    "ChatLocalTransformers": 463,
    "DeltaWalk": 543,  # a blob an upgrade stripped is skipped (#67); _refresh (#76)
    # the store bases' async twins are threaded(name) defaults (issue 58), and the
    # families' last hand-written pairs plans: sizes with the bases before -> after
    # read_at/swap_at: retractions, forks, edits; append_turn: a fork's items unmade (#67)
    "InMemoryHistoryStore": 577,  # the bases say how their sync methods run (#69); erase (#76)
    # 613 -> 533; add's contract written out, superseded_texts from the index (#69);
    # search_words: a turn's latest message found by its words, not a second embedding (#70)
    "InMemorySummaryStore": 586,
    # as InMemoryHistoryStore (#67, #69, #76); the thread's mark read with a turn and an
    # edit stored in place by the append's reply (#78: 692 -> 705, the rule's twins moved
    # to stores/history/rule.py and replace() gone): a debt, not an allowance
    "RedisHistoryStore": 705,
    "RedisSaver": 1034,  # strip_retired (#67); whose read restarts a thread (#76)
    "RedisStore": 546,  # 579 -> 546
    # the directory written after the fence's verdict (#66); as InMemorySummaryStore (#69,
    # #70)
    "RedisSummaryStore": 674,
    "SaverMaintenance": 512,  # strip_retired (#67); _refresh (#76)
    "TieredMemory": 904,  # each pair written once (#58: was 1034); shared_threads= (#66)
    "Tiers": 432,  # attachments per instance (#76); a LangGraph server's threads (#77)
}


def class_sizes_with_bases() -> dict[str, int]:
    """Every class of the package: its lines plus those of each in-package ancestor."""
    own: dict[str, int] = {}
    bases: dict[str, set[str]] = {}
    for path in modules(""):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                own[node.name] = max(own.get(node.name, 0), node.end_lineno - node.lineno + 1)
                names = {ast.unparse(b).split("[")[0].rsplit(".", 1)[-1] for b in node.bases}
                bases.setdefault(node.name, set()).update(names)

    def ancestors(name: str, seen: set[str]) -> set[str]:
        for base in bases.get(name, set()) & own.keys():
            if base not in seen:
                seen.add(base)
                ancestors(base, seen)
        return seen

    return {n: own[n] + sum(own[a] for a in ancestors(n, set()) - {n}) for n in own}


def test_a_class_counted_with_its_bases_stays_within_the_limit() -> None:
    sizes = class_sizes_with_bases()
    assert sizes["RedisSummaryStore"] > sizes["SummaryStore"]  # the bases are counted
    over = {name: size for name, size in sizes.items() if size > CLASS_LINES}
    grown = {n: s for n, s in over.items() if s > OVER_WITH_BASES.get(n, CLASS_LINES)}
    assert not grown, f"over {CLASS_LINES} lines with its bases (compose, see #48): {grown}"
    mended = sorted(set(OVER_WITH_BASES) - set(over))
    assert not mended, f"now within {CLASS_LINES} lines: take {mended} off the list"


def test_no_import_cycle_even_counting_type_only_imports() -> None:
    graph = module_graph()
    cycles = []
    for start in graph:  # a path back to start, by depth-first search (the graph is small)
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    cycles.append(path)
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert not cycles, f"import cycles: {sorted({' -> '.join(sorted(c)) for c in cycles})}"


def test_every_plan_runs_through_the_one_driver() -> None:
    """Plans (generators of steps) are run by ``_steps.drive``/``adrive`` only: a module
    that sends into a generator itself is a second driver to keep in step."""
    found = []
    for path in modules(""):
        if path.name == "_steps.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("send", "throw", "asend"):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, f"a hand-written plan driver: {found}"


_NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16,
}  # fmt: skip


def test_the_store_contract_counts_on_the_page_are_the_codes() -> None:
    """docs/development.md counts the abstract methods of each store base and of all three
    (it said 13/29 while the code had 15/31): read from the page, counted in the code."""
    from langchain_tiered_memory.stores import HistoryStore, SummaryStore, TagStore

    text = " ".join(LAYOUT.read_text(encoding="utf-8").split())
    bases = (TagStore, HistoryStore, SummaryStore)
    total = 0
    for base in bases:
        found = re.search(rf"`{base.__name__}` (?:has )?(\w+)[,)]", text)
        assert found, f"docs/development.md no longer counts {base.__name__}'s methods"
        count = len(base.__abstractmethods__)
        assert _NUMBERS.get(found.group(1)) == count, (
            f"{base.__name__} has {count} abstract methods: {sorted(base.__abstractmethods__)}"
        )
        total += count
    said = re.search(r"the abstract methods of the three bases \((\d+)", text)
    assert said and int(said.group(1)) == total, f"the three bases have {total}"


def test_the_optional_contract_methods_are_named_on_the_page() -> None:
    """Every concrete method a backend replaces to be complete (a default that warns or
    raises) is named with its base on the page, with the capability it stands for."""
    text = LAYOUT.read_text(encoding="utf-8")
    for name in ("HistoryStore.erase", "TagStore.drop_thread", "HistoryStore.read_at"):
        assert f"`{name}" in text, name
    assert "`history_revisions`" in text
