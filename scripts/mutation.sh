#!/usr/bin/env bash
# Mutation testing of the core (not run by CI: it takes a long time).
#
#     bash scripts/mutation.sh [mutmut run args]    e.g. "langchain_tiered_memory.backend.keys*"
#
# mutmut (pinned) mutates stores/, persistence/, summarization/summarizer.py,
# agent/prompt.py and backend/keys.py (see
# [tool.mutmut] in pyproject.toml) and runs the unit tests against each mutant; it prints
# the survivors and the kill rate. Inspect a survivor with `mutmut show NAME`: an
# equivalent mutant (no behaviour changes) is not a missing test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
"${PYTHON}" -m pip install -q "mutmut==3.8.1" 2>&1 | { grep -v "^WARNING: Location" || true; }
rm -rf mutants
"${PYTHON}" -m mutmut run --max-children "${MUTMUT_CHILDREN:-2}" "$@" || true
"${PYTHON}" -m mutmut results --all true > mutants/results.txt || true
"${PYTHON}" - <<'PY'
import collections
import re
from pathlib import Path

counts = collections.Counter()
for line in Path("mutants/results.txt").read_text().splitlines():
    match = re.match(r"\s*(\S+): (.+)$", line)
    if match:
        counts[match.group(2).strip()] += 1
# a mutant that crashes or hangs the tests was detected too
killed = counts["killed"] + counts["timeout"] + counts["segfault"]
scored = killed + counts["survived"]
print("mutants:", dict(counts))
if scored:
    print(f"kill rate: {killed}/{scored} = {killed / scored:.1%} (timeouts, crashes count)")
for line in Path("mutants/results.txt").read_text().splitlines():
    if line.strip().endswith(": survived"):
        print("survived:", line.split(":")[0].strip())
PY
