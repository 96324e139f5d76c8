"""Spanish, the language added last: this one module is all it took (its tests are in
``tests/unit_tests/test_languages.py``).

Example:
    >>> from langchain_tiered_memory.language.registry import language_of
    >>> language_of("Me llamo Lucía y tengo treinta y dos años").code
    'es'
    >>> LANGUAGE.numbers("tengo treinta y dos años")
    'tengo 32 años'
"""

from __future__ import annotations

import re

from langchain_tiered_memory.language.record import DateGrammar, Language, LanguageRules, Replies

__all__ = ["LANGUAGE"]

_RELATIONS = (
    r"(?:hermana|hermano|madre|mamá|padre|papá|padres|esposa|esposo|marido|mujer|pareja|hijo|"
    r"hija|hijos|amigo|amiga|novio|novia|jefe|jefa|primo|prima|tía|tío|abuela|abuelo|vecino|"
    r"vecina|compañero|compañera|perro|gato|familia)"
)
_NAME = r"[A-ZÁÉÍÓÚÑ][\w'’-]*(?: [A-ZÁÉÍÓÚÑ][\w'’-]*){0,2}"
RULES = LanguageRules(
    name="es",
    cues={
        "name": (
            r"\bme llamo",
            r"\bmi nombre(?: completo)? es",
            r"\b(?:puedes |por favor )?ll[aá]mame",
            r"\bme cambi[eé] el nombre a",
        ),
        "age": (r"\bmi edad es", r"\btengo", r"\bacabo de cumplir", r"\bcumpl[ií]", r"\bya tengo"),
    },
    loose_cues={"name": (r"\bsoy",)},
    value_looks={"name": _NAME},
    # "tengo 30 años", never "tengo 3 hijos"
    value_after={"age": r"\s*(?:años\b|[.,!?;:)]|$|y\b|pero\b)", "name": r"(?:\W|$)"},
    suffixes={"age": r"\s*años(?:\s+de\s+edad)?\b"},
    # Spanish drops its subjects: a verb in the first person says the user is one
    self_subject=r"\b(?:yo|me|mi|mis|tengo|soy|estoy|cumplí|cumplo|vivo)\b",
    other_subject=rf"\b(?:mi|mis|su|sus|tu|tus|nuestro|nuestra) {_RELATIONS}s?\b"
    r"|\b(?:él|ella|ellos|ellas|usted|tiene|tienen)\b",
    change=r"\b(?:ahora|ya|en realidad|de hecho|cambié|corrección|perdón|me equivoqué|sino)\b",
    request=r"^\W*(?:hola)?\W*(?:por favor|puedes|podrías|dime|dame|cuéntame|recuérdame|"
    r"ayúdame|resume|resúmeme|traduce|escribe|repite|qué|cuál|cuántos|cómo|por qué|dónde|"
    r"quién|explica|busca|haz|crea)\b",
    remember=r"\b(?:recuerda|recuérdalo|recuerde|recuérdelo|recordar|apunta|anota|"
    r"ten en cuenta)\b",
    negation=r"\b(?:no|nunca|jamás|ni|tampoco|sin)\b",
    reporting=r"\b(?:dijo|dice|dicen|contó|cuenta|piensa|cree|creía|preguntó|escribió)\b",
    irrealis=r"\b(?:si|cuando|hasta que|ojalá|espero|quiero ser|seré|tendré|será|algún día|"
    r"voy a)\b",
    clause_break=r"\b(?:y|pero|porque|aunque|entonces|así que)\b",
    not_after={"name": r"\s+de\b", "age": r"\s*(?:meses|semanas|días|horas|minutos)\b"},
    single_valued={
        "home": r"\b(?:vive|vivo|vivía|se mudó|me mudé|reside)\b",
        "work": r"\b(?:trabaja|trabajo|trabajaba|empleo|renunció|jubilad[oa])\b",
        "diet": r"\b(?:vegetarian[oa]|vegan[oa]|come carne|carne)\b",
        "partner": r"\b(?:solter[oa]|casad[oa]|divorciad[oa]|novi[oa]|espos[oa])\b",
    },
    # the user's own words too, in the first person: a quoted "me mudé a Valencia" is a move
    moved_on=r"\b(?:se mudó|me mudé|me he mudado|ya no|dejó|dejé|ahora|actualmente|cambió|"
    r"cambié|renunció|renuncié|otra vez)\b",
    ceased=r"\b(?:dejó de|dejé de|ya no)\b",
    someone_elses=rf"^\W*(?:(?:el|la|los|las) )?{_RELATIONS}s? del usuario\b"
    rf"|^\W*(?:su|sus) {_RELATIONS}",
)

# ----- numbers in words, before "años" -----

_ONES = "cero uno una dos tres cuatro cinco seis siete ocho nueve".split()
_VALUES = dict(zip(_ONES, (0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9), strict=True))
_TEENS = (
    "diez once doce trece catorce quince dieciséis diecisiete dieciocho diecinueve veinte "
    "veintiuno veintidós veintitrés veinticuatro veinticinco veintiséis veintisiete "
    "veintiocho veintinueve"
).split()
_VALUES |= {word: 10 + i for i, word in enumerate(_TEENS)}
_TENS = "treinta cuarenta cincuenta sesenta setenta ochenta noventa".split()
_VALUES |= {word: 30 + 10 * i for i, word in enumerate(_TENS)}
_AGE_WORDS = re.compile(
    rf"\b(?P<tens>{'|'.join(_TENS)})(?: y (?P<one>{'|'.join(_ONES[1:])}))?\b"
    rf"|\b(?P<alone>{'|'.join(_TEENS + _ONES)})\b(?=\s+años)",
    re.IGNORECASE,
)


def _age_word(match: re.Match[str]) -> str:
    if match["alone"]:
        return str(_VALUES[match["alone"].lower()])
    return str(_VALUES[match["tens"].lower()] + _VALUES.get((match["one"] or "cero").lower(), 0))


def _numbers(text: str) -> str:
    return _AGE_WORDS.sub(_age_word, text)


# ----- dates -----

_MONTHS = {
    name: i + 1
    for i, name in enumerate(
        "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre "
        "diciembre".split()
    )
} | {"setiembre": 9}
_MONTH = r"(?P<month>" + "|".join(_MONTHS) + r")"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_COUNTS = _VALUES | {"un": 1, "unos": 3, "unas": 3, "varios": 3, "varias": 3}
DATES = DateGrammar(
    patterns=(
        ("day", rf"\b(?P<day>[0-3]?\d)\s+de\s+{_MONTH}(?:\s+(?:de|del)\s+{_YEAR})?\b"),
        ("month", rf"\b{_MONTH}\s+(?:de|del)\s+{_YEAR}\b"),
        ("month", rf"\b(?:en|durante|desde|hasta|a principios de|a finales de)\s+{_MONTH}\b"),
        ("year", rf"\b(?:en|el año|desde|hasta)\s+{_YEAR}\b"),
        (
            "ago",
            rf"\bhace\s+(?P<n>\d+|{'|'.join(_COUNTS)})\s+(?P<unit>días?|semanas?|mes|meses|años?)\b",
        ),
        (
            "relative",
            r"\b(?P<rel>anteayer|ayer|hoy|esta semana|este mes|este año|la semana pasada|"
            r"el mes pasado|el año pasado)\b",
        ),
    ),
    hint=r"\d|\b(?:" + "|".join(_MONTHS) + r"|hace|ayer|anteayer|hoy|pasad[oa]|est[ea])\b",
    months=_MONTHS,
    number=lambda text: int(text) if text.isdigit() else _COUNTS.get(text.lower()),
    units={
        "día": 1,
        "días": 1,
        "semana": 7,
        "semanas": 7,
        "mes": 30,
        "meses": 30,
        "año": 365,
        "años": 365,
    },
    relative={
        "hoy": ("day", 0),
        "ayer": ("day", 1),
        "anteayer": ("day", 2),
        "esta semana": ("this", 7),
        "este mes": ("this", 30),
        "este año": ("year", 0),
        "la semana pasada": ("last", 7),
        "el mes pasado": ("last", 30),
        "el año pasado": ("year", -1),
    },
    ignore_case=True,
)

_STOPWORDS = frozenset(
    """
    a al algo algunos ante antes como con contra cual cuando de del desde donde durante e el
    ella ellas ellos en entre era es esa ese eso esta estaba estar este esto estos fue ha
    hay la las le les lo los me mi mis mucho muy más ni no nos nosotros o os otra otro para
    pero poco por porque que qué se sea ser si sin sobre su sus también te tiene tu tus un
    una uno unos y ya yo
    """.split()
)
LANGUAGE = Language(
    code="es",
    name="Spanish",
    order=20,
    # Its commonest words that English has not ("me", "a" are both: "El mes pasado me mudé
    # a Valencia." tied, and English won the tie), and a lower-case word with an accent
    # (mudé, está, también: a capitalised one is a name an English text may hold, Bogotá)
    markers=r"\b(?:yo|me|mi|mis|el|la|los|las|de|del|que|qué|y|en|un|una|es|soy|estoy|"
    r"tengo|años|cómo|cuántos|cuál|por|para|con|se|lo|al|muy|pero|también|hola|llamo|"
    r"nombre|vivo|resume|resumen|usuario|como|hoy|ayer|hace|mes|este|esta|estos|estas|"
    r"trabajo|estudio|nuestra|nuestro|gracias|ahora|hay|sí)\b|[ñ¿¡]"
    r"|(?-i:(?<!\w)[a-zñü]*[áéíóú][a-zñüáéíóú]*(?!\w))",
    rules=RULES,
    # Spanish drops the pronoun: "Vivo en Sevilla." is the user's first person by its
    # verb alone (the verbs of where one lives, works, studies, was born, as "tengo", "soy")
    first_person=r"(?<![\w'])(?:yo|me|mi|mis|conmigo|tengo|soy|estoy|vivo|vivía|trabajo|"
    r"trabajaba|estudio|estudiaba|nací)(?![\w])",
    summarize_request=r"\bres[uú]m\w*",
    tag_questions={
        "age": r"\bcuántos años tengo\b|\bqué edad tengo\b|\bcuál es mi edad\b",
        "name": r"\bcómo me llamo\b|\bcuál es mi nombre\b|\bsabes (?:cómo me llamo|mi nombre)\b",
    },
    tag_question_asides=r"\b(?:hola|oye|y|entonces|ahora|por favor|otra vez|perdona)\b",
    unsure=r"\bno (?:lo )?sé\b|\bno estoy segur[oa]\b|\bno (?:lo )?recuerdo\b",
    replies=Replies(
        tag_answers={"age": "Tienes {value} años.", "name": "Te llamas {value}."},
        tag_labels={"name": "nombre", "age": "edad"},
        recorded="Entendido, lo recordaré ({facts}).",
        stored="De acuerdo, guardé {count} recuerdos:\n{items}",
        nothing_new="Nada nuevo que guardar: la memoria ya está al día.",
        done="Hecho. ",
        heard="Gracias por contármelo.",
        no_answer="Lo siento, no pude dar una respuesta. ¿Puedes preguntarlo de otra forma?",
    ),
    said="El usuario dijo: ",
    the_user="El usuario",
    is_the_user=r"el usuario (?:se llama |es )",
    relation_item="Persona cercana al usuario ({relation}): {item}",
    introduced=rf"\b[Mm]i (?P<relation>{_RELATIONS}),?\s+(?:se llama\s+|es\s+)?"
    r"(?P<name>[A-ZÁÉÍÓÚÑ][\w'-]+)",
    pronoun_subject=r"(?:ella|él|ellos|ellas|su|sus)\b",
    about_assistant=(
        r"(?:el |la )?asistente\b|recordaré\b|lo tendré en cuenta|(?:la |esta )?conversación\b"
    ),
    stopwords=_STOPWORDS,
    dates=DATES,
    numbers=_numbers,
)
