"""How the write path's grounding rule (``summarization/provenance.py``) judges items, on
data nobody tuned it on: LoCoMo's observations, facts about a speaker that annotators wrote
from that speaker's lines of one session.

    python bench/grounding.py --locomo ../shared/data/locomo/locomo_dev.json
    PYTHONPATH=<older checkout> python bench/grounding.py --locomo PATH   # before

- **kept (true items)**: an observation of speaker X in session s, judged against session
  s with X as the user and the other speaker as the assistant (X's name known, as a tag):
  the share kept. Paraphrase and abstraction are the annotators'.
- **dropped (invented items)**: the same observation judged against another session of the
  same conversation (``s + 3``): the speaker, the names and the topics are the same, the
  facts are not: the share dropped.

Both sides count: a rule that keeps everything scores 1.00 and 0.00. The first two
conversations are the dev split (``MIN_SAID_SHARE`` was chosen there), the other three
held out.
"""

from __future__ import annotations

import argparse
import json
import random

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_tiered_memory.summarization.provenance import grounded_in_user


def _session(conv: dict, n: int, speaker: str) -> list[tuple[int, BaseMessage]]:
    out: list[tuple[int, BaseMessage]] = []
    for i, turn in enumerate(conv.get(f"session_{n}") or []):
        cls = HumanMessage if turn["speaker"] == speaker else AIMessage
        out.append((i, cls(turn["text"])))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--locomo", required=True, help="locomo_dev.json (not packaged)")
    p.add_argument("--show", type=int, default=0, help="print this many wrong calls of each kind")
    args = p.parse_args()
    with open(args.locomo) as f:
        data = json.load(f)
    print("| split | true items | kept | invented items | dropped |")
    print("|---|---:|---:|---:|---:|")
    wrong: dict[str, list[str]] = {"dropped true": [], "kept invented": []}
    for split, convs in (("dev", data[:2]), ("held out", data[2:])):
        _split(split, convs, wrong)
    rng = random.Random(0)
    for kind, rows in wrong.items():
        for row in rng.sample(rows, min(args.show, len(rows))):
            print(f"{kind}: {row}")


def _split(split: str, convs: list[dict], wrong: dict[str, list[str]]) -> None:
    kept = true = dropped = invented = 0
    for conv in convs:
        sessions = conv["conversation"]
        numbers = [
            int(k.split("_")[1])
            for k in conv["observation"]
            if sessions.get(f"session_{k.split('_')[1]}")
        ]
        for n in numbers:
            other = numbers[(numbers.index(n) + 3) % len(numbers)]
            for speaker, facts in conv["observation"][f"session_{n}_observation"].items():
                items = [fact for fact, _ in facts if isinstance(fact, str)]
                own, _ = grounded_in_user(items, _session(sessions, n, speaker), [speaker])
                true += len(items)
                kept += len(own)
                wrong["dropped true"] += [i for i in items if i not in own]
                _, gone = grounded_in_user(items, _session(sessions, other, speaker), [speaker])
                invented += len(items)
                dropped += len(gone)
                wrong["kept invented"] += [i for i in items if i not in gone]
    print(f"| {split} | {true} | {kept / true:.3f} | {invented} | {dropped / invented:.3f} |")


if __name__ == "__main__":
    main()
