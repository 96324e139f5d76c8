"""Updates the words make clear (``summarization/updates.py``): how often the rule fires on
real updates, and how often it would supersede what is still true.

    python bench/update_rules.py                 # the dev split
    python bench/update_rules.py --split held_out

Each case is stored summary items and a new one (``bench/data/update_statements.json``,
English and Chinese), labelled with the stored item the new one makes no longer true, or
none ("the user now has a cat too", "the user's sister moved", "planning to move"). The
rule is given every stored item as the update step's similar items, newest first. Printed
per language: updates found (recall), stored items wrongly superseded (false), and the
missed and false cases.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from langchain_core.documents import Document

from langchain_tiered_memory.summarization.updates import clear_updates

DATA = Path(__file__).parent / "data" / "update_statements.json"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--split", choices=["dev", "held_out", "probe"], default="dev")
    args = p.parse_args()
    cases = json.loads(DATA.read_text())[args.split]
    rows: dict[str, dict[str, int]] = {}
    wrong: list[str] = []
    for case in cases:
        docs = [Document(t, id=str(k)) for k, t in enumerate(case["stored"])][::-1]
        found = clear_updates([case["new"]], [docs]).get(0)
        got = int(found[0]) if found else None
        want = case["supersedes"]
        row = rows.setdefault(case["lang"], {"updates": 0, "found": 0, "others": 0, "false": 0})
        if want is None:
            row["others"] += 1
            row["false"] += got is not None
        else:
            row["updates"] += 1
            row["found"] += got == want
        if got != want:
            wrong.append(f"- {case['lang']}: {case['stored']} -> {case['new']!r}: {got} ({want})")
    print(f"### Clear updates, {args.split} split\n")
    print("| language | updates | found by the words | not updates | wrongly superseded |")
    print("|---|---:|---:|---:|---:|")
    for lang, row in rows.items():
        print(f"| {lang} | {row['updates']} | {row['found']} | {row['others']} | {row['false']} |")
    if wrong:
        print("\nmissed or false (case: got (wanted)):")
        print("\n".join(wrong))


if __name__ == "__main__":
    main()
