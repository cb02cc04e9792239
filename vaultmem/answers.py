"""What kind of answer a question asks for, and whether a text could hold one.

A question that asks for a number ("how much did it cost?", "多少钱") or a name
("what is her cat called?", "叫什么名字") is answered only by a text that holds a
number or a name it does not already give. A note that holds the question's words but
no such thing — "I'm taking a woodworking class on Saturdays" for "How much does
Ben's woodworking class cost?" — is about the question, not an answer to it. Search
scores such a note's relevance down (``retrieve.ANSWER_MISSING``), so that a vault
that has no answer says so more often (docs/recall.md, "What kind of answer").

The patterns are deliberately narrow: a question of any other shape (what, why, where,
when — a note's own date answers "when") asks for no kind here, and its notes are
judged by their words alone. Pure functions, no state.
"""

from __future__ import annotations

import re

from .patterns import Lazy

NUMBER = "number"
NAME = "name"

_EN_NUMBER_Q = re.compile(r"\bhow\s+(?:much|many|old|long|far|tall|big|heavy|fast)\b|\bwhat\s+(?:percentage|price|score|"
                          r"age|number|size)\b", re.I)
_EN_NAME_Q = re.compile(r"\b(?:what|which)(?:'s|\s+is|\s+was|\s+are|\s+were)?\s+(?:the\s+)?(?:\w+'s\s+)?"
                        r"(?:\w+\s+)?(?:name|title|brand)s?\b|\b(?:called|named)\s*\?|\bwhat\s+(?:brand|make)\b", re.I)
# a Chinese question's patterns are compiled for the first question that is not ASCII
_ZH_NUMBER_Q = Lazy(r"多少|几[个岁次天年月周块点本张只条位人家号]|多大|多久|多长|多远|多高|多重|几点")
_ZH_NAME_Q = Lazy(r"叫什么|叫啥|什么名字|名字是|姓什么|什么牌子|哪个牌子|哪家|什么品牌|书名|片名|店名")

_EN_NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
                    "hundred thousand million billion dozen half couple").split()
_EN_NUMBER = Lazy(r"\d|[$€£¥%]|\b(?:" + "|".join(_EN_NUMBER_WORDS) + r")s?\b", re.I)
_ZH_NUMERAL = "零〇一二两三四五六七八九十百千万亿半"
_ZH_NUMBER = Lazy(rf"\d|[十百千万亿]|[{_ZH_NUMERAL}]+[块元钱岁个次天周年月号点小分公米斤份节人名位本张套件双只条场所家级度倍成折层%]")
# a name: a capitalised word inside a sentence, a quotation, a title in 《》, or 叫/名叫/姓 + a word
# (what a text holds is asked only for a question that asks for a number or a name: compiled then)
_QUOTED = Lazy(r"[\"“「『《][^\"”」』》]{1,40}[\"”」』》]")
_ZH_NAMED = Lazy(r"(?:叫做?|名叫|名字是|姓)[^\s，。！？,.!?的]")
_CAPITALISED = Lazy(r"(?<![.!?。！？:]\s)(?<!^)(?<![\"“(])\b([A-Z][\w'’-]*)")
_NOT_NAMES = frozenset("""i i'm i've i'd i'll ok okay monday tuesday wednesday thursday friday saturday sunday
january february march april may june july august september october november december""".split())


def answer_kind(question: str) -> str | None:
    """The kind of answer ``question`` asks for: ``NUMBER``, ``NAME`` or ``None`` (any)."""
    chinese = not question.isascii()
    if _EN_NUMBER_Q.search(question) or (chinese and _ZH_NUMBER_Q.search(question)):
        return NUMBER
    if _EN_NAME_Q.search(question) or (chinese and _ZH_NAME_Q.search(question)):
        return NAME
    return None


def holds_answer(kind: str | None, text: str, question: str = "") -> bool:
    """Whether ``text`` holds an answer of ``kind`` that ``question`` does not already
    give: a number (digits, a number word, a Chinese numeral with its unit), or a name (a
    capitalised word that does not open a sentence and is not in the question, a
    quotation or a 《title》, 叫/名叫/姓 and what follows). Any text holds an answer
    of kind ``None``."""
    if kind is None:
        return True
    if kind == NUMBER:
        return bool(_EN_NUMBER.search(text) or _ZH_NUMBER.search(text))
    if _QUOTED.search(text) or _ZH_NAMED.search(text):
        return True
    asked = {re.split(r"['’]", w)[0].lower() for w in re.findall(r"[\w'’-]+", question)}
    for line in text.splitlines():
        for m in _CAPITALISED.finditer(line.strip()):
            word = re.split(r"['’]", m.group(1))[0].lower()
            if word not in asked and word not in _NOT_NAMES and word.removesuffix("s") not in _NOT_NAMES:
                return True  # "Saturdays" is no more a name than "Saturday"
    return False
