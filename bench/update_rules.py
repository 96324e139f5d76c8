"""Updates the words make clear (``summarization/updates.py``): how often the rule fires on
real updates, and how often it would supersede what is still true.

    python bench/update_rules.py                 # the dev split
    python bench/update_rules.py --split held_out
    python bench/update_rules.py --ordinary ../shared/data/locomo/locomo_dev.json

Each case is stored summary items and a new one (``bench/data/update_statements.json``,
English and Chinese), labelled with the stored item the new one makes no longer true, or
none ("the user now has a cat too", "the user's sister moved", "planning to move"). The
rule is given every stored item as the update step's similar items, newest first. Printed
per language: updates found (recall), stored items wrongly superseded (false), and the
missed and false cases.

``--ordinary PATH`` measures instead how often the rule fires on ordinary conversation, where
almost nothing is an update: LoCoMo's conversations (the path given; CC BY-NC 4.0, never
packaged), each speaker one user, two item forms in turn: the sessions' ``observation``
facts with the speaker's name as "The user", and the speaker's own lines as the extractive
fallback stores them ("The user said: ..."). Every item is checked against all of the
speaker's items of earlier sessions (more than the update step's few similar ones: an upper
bound). Printed: items, firings, the rate, and every firing, to be read by a person.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from langchain_core.documents import Document

from langchain_tiered_memory.language.text import said_item
from langchain_tiered_memory.summarization.updates import clear_updates

DATA = Path(__file__).parent / "data" / "update_statements.json"


def _speakers(path: str) -> dict[str, dict[str, list[list[str]]]]:
    """Per form, per speaker: the speaker's items, per session, in session order."""
    out: dict[str, dict[str, list[list[str]]]] = {"observation": {}, "said": {}}
    for conv in json.loads(Path(path).read_text(encoding="utf-8")):
        c = conv["conversation"]
        ids = sorted(int(k.split("_")[1]) for k in c if re.fullmatch(r"session_\d+", k))
        for n in ids:
            facts = conv["observation"].get(f"session_{n}_observation", {})
            for speaker in (c["speaker_a"], c["speaker_b"]):
                who = f"{conv['sample_id']}/{speaker}"
                name = re.compile(rf"\b{re.escape(speaker)}(?='s\b|\b)")
                seen = [name.sub("The user", f, count=1) for f, *_ in facts.get(speaker, [])]
                out["observation"].setdefault(who, []).append(seen)
                said = [said_item(t["text"]) for t in c[f"session_{n}"] if t["speaker"] == speaker]
                out["said"].setdefault(who, []).append(said)
    return out


def ordinary(path: str) -> None:
    print("### The rule on ordinary conversation (LoCoMo dev)\n")
    print("| item form | items | firings | rate |")
    print("|---|---:|---:|---:|")
    fired: list[str] = []
    for form, speakers in _speakers(path).items():
        items = firings = 0
        for sessions in speakers.values():
            for n, session in enumerate(sessions):
                earlier = [t for s in sessions[:n] for t in s][::-1]  # newest first
                docs = [Document(t, id=str(k)) for k, t in enumerate(earlier)]
                for item in session:
                    items += 1
                    if (got := clear_updates([item], [docs]).get(0)) is not None:
                        firings += 1
                        fired.append(f"- {form}: {earlier[int(got[0])]!r} -> {item!r}")
        print(f"| {form} | {items} | {firings} | {firings / max(items, 1):.4f} |")
    if fired:
        print("\nevery firing (stored -> new):")
        print("\n".join(fired))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--split", choices=["dev", "held_out", "probe", "probe_round4"], default="dev")
    p.add_argument("--ordinary", metavar="LOCOMO_JSON", help="the firing rate on conversation")
    args = p.parse_args()
    if args.ordinary:
        ordinary(args.ordinary)
        return
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
