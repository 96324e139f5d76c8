"""Language-aware text handling shared by recall and the write path.

The package serves users in any language. Three things here depend on the script:

- **tokens for lexical recall** (:func:`tokenize`): words for scripts that separate words
  with spaces; inside runs of Chinese, Japanese or Korean characters, the characters and
  their bigrams (Lucene's ``CJKBigramFilter`` with ``outputUnigrams``): bigrams match
  two-character words, unigrams the many one-character ones ("几岁" / "二十八岁" share only
  "岁"); English stop words and a light stemmer apply only to ASCII words;
- **first-person statements** (:func:`is_first_person`, :func:`is_question`): the trigger of
  forced tag capture and the extractive fallback for small models, for English, Chinese,
  Japanese, Korean, German, French, Spanish, Portuguese, Italian and Russian;
- **sentences** (:func:`split_sentences`), with CJK full stops that need no space after;
- **scripts** (:func:`script_share`): how much of a text an embedding model can read, for
  recall to weigh that model's signal.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

from langchain_tiered_memory.language.registry import joined, language_of, languages

__all__ = [
    "STOPWORDS",
    "char_grams",
    "is_cjk",
    "is_first_person",
    "answer_states",
    "asks_to_summarize",
    "is_question",
    "restatement_key",
    "said_item",
    "script_of",
    "script_share",
    "split_sentences",
    "stem",
    "timestamp",
    "tokenize",
    "unsaid",
]

_CJK_RANGES = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana
    (0x20000, 0x2FA1F),  # CJK extensions B-F, compatibility supplement
)


def is_cjk(char: str) -> bool:
    """Whether ``char`` is a Chinese, Japanese or Korean character (not punctuation).

    Example:
        >>> [is_cjk(c) for c in "a我カ한。"]
        [False, True, True, True, False]

    """
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in _CJK_RANGES)


def script_of(char: str) -> str | None:
    """The script of a letter, lower case (``"latin"``, ``"han"``, ``"kana"``, ``"hangul"``,
    ``"cyrillic"``, ...), or ``None`` for anything that is not a letter (digits, signs).

    Example:
        >>> [script_of(c) for c in "aé我カ한я7"]
        ['latin', 'latin', 'han', 'kana', 'hangul', 'cyrillic', None]

    """
    if not char.isalpha():
        return None
    if char.isascii():
        return "latin"
    first = unicodedata.name(char, "").split(" ", 1)[0]
    return _SCRIPT_NAMES.get(first, first.lower() or None)


_SCRIPT_NAMES = {"CJK": "han", "HIRAGANA": "kana", "KATAKANA": "kana", "HALFWIDTH": "kana"}


def said_item(sentence: str, *, context: str | None = None) -> str:
    """A summary item quoting the user's own sentence, in the sentence's language (its
    record's ``said``, else English's): the extractive fallback's item (no model involved,
    so nothing is invented). ``context`` (what the user said around it) breaks a tie of
    the sentence's languages: "El mes pasado me mudé a Valencia." holds as many English
    markers as Spanish ones, and an English label on it made the language rule drop it.

    Example:
        >>> said_item("I live in Lyon.")
        'The user said: I live in Lyon.'
        >>> said_item("我叫李明，今年28岁。")
        '用户说：我叫李明，今年28岁。'
        >>> said_item("Me mudé a Valencia.", context="Hoy hace sol. Me mudé a Valencia.")
        'El usuario dijo: Me mudé a Valencia.'
    """
    sentence = sentence.strip()
    prefer = language_of(context) if context else None
    return (language_of(sentence, prefer=prefer).said or languages()[0].said or "") + sentence


def script_share(text: str, scripts: frozenset[str] | set[str]) -> float:
    """The share of the letters of ``text`` written in one of ``scripts`` (1.0 if none).

    Example:
        >>> script_share("When is my birthday?", {"latin"})
        1.0
        >>> script_share("我的生日是哪天？", {"latin"})
        0.0
        >>> round(script_share("Alice的生日", {"latin"}), 2)
        0.62

    """
    total = inside = 0
    for char in text:
        script = script_of(char)
        if script is not None:
            total += 1
            inside += script in scripts
    return inside / total if total else 1.0


_WORD = re.compile(r"[^\W_]+", re.UNICODE)

STOPWORDS = languages()[0].stopwords
"""The first record's (English) function words: they carry no topic, and BM25 would give
them weight in a small collection where they are not frequent enough to get a low IDF."""
_STOPWORD_LISTS = tuple(language.stopwords for language in languages() if language.stopwords)


def _stopwords_of(words: list[str]) -> frozenset[str]:
    """The function words of the language ``words`` hold most of (English on a tie): one
    language's, never all (Spanish "son" is English "son").
    """
    # max() keeps the first of equals: English on a tie
    return max(_STOPWORD_LISTS, key=lambda stopwords: sum(word in stopwords for word in words))


def stem(word: str) -> str:
    """A light English stemmer: folds plurals and -ing/-ed forms ("paintings" -> "paint").

    Deliberately conservative (no derivational suffixes), so distinct words rarely merge.
    Words that are not ASCII letters are returned as they are.

    Example:
        >>> [stem(w) for w in ["paintings", "painted", "hobbies", "running", "glass"]]
        ['paint', 'paint', 'hobby', 'run', 'glass']

    """
    if len(word) <= 3 or not (word.isascii() and word.isalpha()):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("ing") and len(word) > 5:
        return _undouble(word[:-3])
    if word.endswith("ed") and len(word) > 4:
        return _undouble(word[:-2])
    if word.endswith("es") and word[-3] in "sxz" and len(word) > 4:
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return stem(word[:-1]) if word[:-1].endswith("ing") else word[:-1]
    return word


def _undouble(word: str) -> str:
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        return word[:-1]
    return word


def _runs(word: str) -> list[tuple[bool, str]]:
    """``word`` cut into runs of CJK and of other characters."""
    out: list[tuple[bool, str]] = []
    for char in word:
        cjk = is_cjk(char)
        if out and out[-1][0] == cjk:
            out[-1] = (cjk, out[-1][1] + char)
        else:
            out.append((cjk, char))
    return out


def tokenize(text: str) -> list[str]:
    """Tokens for lexical recall: words, or characters and character bigrams in CJK runs.

    Text is NFKC-normalized and case-folded; words lose the stop words of the text's
    language (English's unless another record's are more of its words); ASCII words are
    stemmed (:func:`stem`); other words are kept as they are.

    Example:
        >>> tokenize("What did Melanie paint recently?")
        ['melanie', 'paint', 'recently']
        >>> tokenize("我几岁？")
        ['我', '几', '岁', '我几', '几岁']

    """
    tokens: list[str] = []
    words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
    stopwords = _stopwords_of(words) if len(_STOPWORD_LISTS) > 1 else STOPWORDS
    for word in words:
        if word.isascii():  # most words: no CJK run to look for
            if word not in stopwords:
                tokens.append(stem(word))
            continue
        for cjk, run in _runs(word):
            if cjk:
                tokens.extend(run)
                tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
            elif run.isascii():
                if run not in stopwords:
                    tokens.append(stem(run))
            else:
                tokens.append(run)
    return tokens


_SUMMARIZE_REQUEST = joined("summarize_request")


def asks_to_summarize(text: str) -> bool:
    """Whether a message asks for the conversation to be summarized (several languages).

    Example:
        >>> asks_to_summarize("Please summarize our conversation.")
        True
        >>> [asks_to_summarize(t) for t in ["请总结一下我们的对话。", "I like tea."]]
        [True, False]

    """
    return bool(_SUMMARIZE_REQUEST.search(text))


def restatement_key(text: str) -> tuple[str, ...]:
    """What two texts must share to say the same thing: their words in order, case-folded,
    every CJK character a word, punctuation and spacing ignored.

    Summary de-duplication drops a new item only when its embedding is close to a stored
    item's *and* their keys are equal: embedding models put one-word differences ("mother" /
    "father", "吃肉" / "不吃肉") close together, some above any fixed cosine.

    Example:
        >>> restatement_key("  Alice's BIRTHDAY: May 8!")
        ('alice', 's', 'birthday', 'may', '8')
        >>> restatement_key("用户吃肉。") == restatement_key("用户不吃肉。")
        False

    """
    words: list[str] = []
    for word in _WORD.findall(unicodedata.normalize("NFKC", text).casefold()):
        if word.isascii():
            words.append(word)
            continue
        for cjk, run in _runs(word):
            words.extend(run if cjk else [run])
    return tuple(words)


_FIRST_PERSON = joined("first_person")


def is_first_person(text: str) -> bool:
    """Whether ``text`` speaks in the first person (I, my, 我, 私, ich, je, ...).

    Example:
        >>> [is_first_person(t) for t in ["I am 30.", "我三十岁。", "Ich bin 30.", "Hello"]]
        [True, True, True, False]

    """
    return bool(_FIRST_PERSON.search(text))


_QUESTION_END = re.compile(rf"(?:[?？؟]|{joined('question_end').pattern})\s*$", re.IGNORECASE)


def is_question(text: str) -> bool:
    """Whether ``text`` ends as a question ("?", "？", Chinese 吗/呢, Japanese か).

    Example:
        >>> [is_question(t) for t in ["How old am I?", "我多大了吗", "My name is Ann."]]
        [True, True, False]

    """
    return bool(_QUESTION_END.search(text.strip()))


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, white space folded; CJK full stops need no space after.

    Example:
        >>> split_sentences("I'm Ann. I live in Lyon. 我叫李明。我喜欢茶。")
        ["I'm Ann.", 'I live in Lyon.', '我叫李明。', '我喜欢茶。']

    """
    out = []
    for part in _SENTENCE_END.split(text.strip()):
        sentence = " ".join(part.split())
        if sentence:
            out.append(sentence)
    return out


def timestamp(value: object) -> str:
    """An item's ``created_at`` to the minute, as notes are shown (``"2026-12-01 14:03"``;
    a date alone stays a date; ``""`` if there is none): two notes of one day still order.

    Example:
        >>> timestamp("2026-12-01T14:03:59.120+00:00"), timestamp("2026-03-01")
        ('2026-12-01 14:03', '2026-03-01')
    """
    text = str(value or "").strip()
    if len(text) >= 16 and text[10] in "T ":
        return f"{text[:10]} {text[11:16]}"
    return text[:10]


# A reply that is a tool call written as text, or JSON, states nothing to the user.
_CALL_TEXT = re.compile(r'^\s*[\[{]|<tool_call>|"arguments"\s*:|"name"\s*:\s*"user_tag"|^\s*\w+\(')
_UNSURE = joined("unsure")
_CLAUSE_END = re.compile(r"[.!?\n。！？]")


def answer_states(reply: str, fact: re.Pattern[str] | str) -> bool:
    """Whether ``reply`` *states* ``fact`` (a regex, or a word such as ``"30"`` matched as
    a whole word): in a sentence that is not a question, in a reply that is not a JSON blob
    or a tool call written as text, and that does not say it does not know.

    Example:
        >>> answer_states("You are 30 years old.", "30")
        True
        >>> [answer_states(r, "30") for r in ("You are 300.", "Are you 30?", '{"age": 30}')]
        [False, False, False]
    """
    if isinstance(fact, str):
        fact = _whole(fact)
    if not reply.strip() or _CALL_TEXT.search(reply) or _UNSURE.search(reply):
        return False
    for match in fact.finditer(reply):
        end = _CLAUSE_END.search(reply, match.end())
        if end is None or end.group() not in "?？":
            return True
    return False


def char_grams(text: str) -> set[str]:
    """Character n-grams of ``text``, for any language: trigrams, and bigrams inside CJK runs
    (where one character is a word or a morpheme). Case, width and punctuation are folded.

    Example:
        >>> sorted(char_grams("Tea!"))
        ['tea']
        >>> sorted(char_grams("喜欢茶"))
        ['喜欢', '喜欢茶', '欢茶']

    """
    norm = " ".join(
        "".join(
            c if c.isalnum() else " " for c in unicodedata.normalize("NFKC", text).casefold()
        ).split()
    )
    grams = {norm[i : i + 3] for i in range(len(norm) - 2)}
    grams |= {
        norm[i : i + 2] for i in range(len(norm) - 1) if is_cjk(norm[i]) and is_cjk(norm[i + 1])
    }
    return {g for g in grams if g.strip() and not g.startswith(" ") and not g.endswith(" ")}


def states_value(text: str, value: str) -> bool:
    """Whether ``text`` states ``value`` as a whole (not "30" inside "300"; CJK text has no
    spaces, so only letters and digits bound it).
    """
    return bool(value) and _whole(value, re.IGNORECASE).search(text) is not None


def _whole(word: str, flags: int = 0) -> re.Pattern[str]:
    # a whole word, also between CJK characters (where \b sees no boundary: both are \w)
    return re.compile(rf"(?<![0-9A-Za-z]){re.escape(word)}(?![0-9A-Za-z])", flags)


def unsaid(held: Mapping[str, str], old: Sequence[str], new: Sequence[str]) -> list[str]:
    """The names of the ``held`` values some ``old`` text states and no ``new`` one does:
    what an edit or a fork took back ("I am 30." -> "I am 31." takes back the age 30).

    Example:
        >>> unsaid({"age": "30", "name": "Ann"}, ["I am 30."], ["I am 31."])
        ['age']
    """
    return [
        name
        for name, value in held.items()
        if any(states_value(t, value) for t in old) and not any(states_value(t, value) for t in new)
    ]
