"""Loaders shared by the recall benches: LoCoMo (English) and XQuAD (English and Chinese).

Neither data set ships with this repository (both are for benchmarks only); every bench
takes the path as an argument. Each loader returns users: items with their day and the
questions asked of them, with the positions of the items that hold the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone


@dataclass
class Question:
    text: str
    evidence: set[int]  # groups (LoCoMo: sessions; XQuAD: sentences) that hold the answer
    category: str


@dataclass
class User:
    user_id: str
    items: list[str] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)  # the evidence group of each item
    created: list[datetime] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


# ----------------------------------------------------------------------------- XQuAD

# Sentence ends: Chinese full stops, and Latin ones followed by a space and a capital/digit.
_ZH_END = re.compile(r"(?<=[。！？；])")
_EN_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(A-Z0-9])")


def _sentences(context: str, lang: str) -> list[tuple[int, str]]:
    """(start offset, sentence) of each sentence of ``context``."""
    out: list[tuple[int, str]] = []
    pattern = _ZH_END if lang == "zh" else _EN_END
    start = 0
    for m in list(pattern.finditer(context)) + [None]:
        end = m.start() if m is not None else len(context)
        piece = context[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((start + lead, piece.strip()))
        start = m.end() if m is not None else len(context)
    return out


def load_xquad(
    path: str, lang: str, *, articles_per_user: int = 4, split: str = "all"
) -> list[User]:
    """XQuAD (google-deepmind/xquad, CC BY-SA 4.0): 240 Wikipedia paragraphs of 48 articles
    with 1,190 questions, professionally translated into 10 languages, so the English and
    the Chinese file ask the same questions of the same text.

    Each user holds ``articles_per_user`` consecutive articles, one item per sentence, the
    paragraphs on consecutive days; a question's evidence is the sentence its answer starts
    in. ``split``: ``"dev"`` (even user blocks: the only ones used to choose anything),
    ``"heldout"`` (odd blocks: reported, never tuned on) or ``"all"``.
    """
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    users: list[User] = []
    day0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    for block in range(0, len(data), articles_per_user):
        number = block // articles_per_user
        if split == "dev" and number % 2:
            continue
        if split == "heldout" and not number % 2:
            continue
        user = User(f"xquad-{lang}-{number}")
        day = 0
        for article in data[block : block + articles_per_user]:
            for para in article["paragraphs"]:
                sents = _sentences(para["context"], lang)
                first = len(user.items)
                for i, (_, text) in enumerate(sents):
                    user.items.append(text)
                    user.groups.append(first + i)
                    user.created.append(day0 + timedelta(days=day))
                day += 1
                starts = [s for s, _ in sents]
                for qa in para["qas"]:
                    at = qa["answers"][0]["answer_start"]
                    j = max(i for i, s in enumerate(starts) if s <= at) if starts else 0
                    user.questions.append(Question(qa["question"], {first + j}, "xquad"))
        users.append(user)
    return users


# ----------------------------------------------------------------------------- LoCoMo

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def _locomo_date(text: str) -> datetime:
    """LoCoMo's session date, e.g. "1:56 pm on 8 May, 2023"."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def _evidence_sessions(evidence: Sequence[str]) -> set[int]:
    out = set()
    for ev in evidence:
        for part in re.split(r"[;,\s]+", ev):
            m = re.match(r"D:?(\d+):", part.strip())
            if m:
                out.add(int(m.group(1)))
    return out


def load_locomo(path: str) -> list[User]:
    """LoCoMo (snap-research/LoCoMo, CC BY-NC 4.0): each conversation is one user whose
    items are its sessions' ``observation`` facts, dated by session; evidence = sessions.
    """
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    users = []
    for conv in data:
        c = conv["conversation"]
        user = User(f"locomo-{conv['sample_id']}")
        for key, value in conv["observation"].items():
            n = int(re.search(r"session_(\d+)", key).group(1))  # type: ignore[union-attr]
            when = _locomo_date(c[f"session_{n}_date_time"])
            for facts in value.values():
                for fact, *_ in facts:
                    if isinstance(fact, str) and fact.strip():
                        user.items.append(fact.strip())
                        user.groups.append(n)
                        user.created.append(when)
        for qa in conv["qa"]:
            if qa.get("category") not in LOCOMO_CATEGORIES:
                continue
            ev = _evidence_sessions(qa.get("evidence") or [])
            if ev:
                user.questions.append(
                    Question(qa["question"], ev, LOCOMO_CATEGORIES[qa["category"]])
                )
        users.append(user)
    return users
