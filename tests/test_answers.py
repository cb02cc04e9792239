"""A question that asks for a number or a name is answered only by a note that holds one
(search's judgement of it: tests/test_recall_context.py)."""

import pytest

from vaultmem.answers import NAME, NUMBER, answer_kind, holds_answer


@pytest.mark.parametrize("question, kind", [
    ("How much does Ben's woodworking class cost?", NUMBER),
    ("How many students does the school have?", NUMBER),
    ("How old is Theo?", NUMBER),
    ("陈默报的雅思培训班花了多少钱？", NUMBER),
    ("老孟的女儿几岁了？", NUMBER),
    ("What is the name of Tom's cat?", NAME),
    ("What's Tom's cat called?", NAME),
    ("What is the title of Hannah's novel?", NAME),
    ("林夏的室友叫什么名字？", NAME),
    ("苏苏的驾校教练姓什么？", NAME),
    ("小北的三脚架是什么牌子的？", NAME),
    # any other shape asks for no kind: its notes are judged by their words alone
    ("What kind of salad did Sofia bring?", None),
    ("When did Tom adopt the dog?", None),
    ("Why did Leah move to Denver?", None),
    ("林夏为什么去杭州？", None),
])
def test_the_kind_of_answer_a_question_asks_for(question, kind):
    assert answer_kind(question) == kind


@pytest.mark.parametrize("kind, text, question, holds", [
    (NUMBER, "The class is 120 dollars for six weeks.", "How much is the class?", True),
    (NUMBER, "It cost twenty bucks.", "How much?", True),
    (NUMBER, "I'm taking a woodworking class on Saturdays now.", "How much?", False),
    (NUMBER, "报名了，去驾校交的钱，四千二。", "多少钱？", True),
    (NUMBER, "一小时四十块。", "多少钱？", True),
    (NUMBER, "我们一起去吧，一下就好。", "多少钱？", False),  # 一 in a word is not a number
    (NAME, "She's a greyhound, her name is Pepper.", "What is the name of Tom's cat?", True),
    (NAME, "Busy! My advisor finally approved my thesis topic.", "What is the name of Grace's advisor?", False),
    (NAME, "We had a kitchen fire on Tuesday.", "What is the name of the fire station?", False),
    (NAME, "Also, I'm taking a woodworking class on Saturdays now.", "What is the name of Ben's brother?", False),
    (NAME, "Ask Grace about it.", "What is the name of Grace's advisor?", False),  # the question's own name
    (NAME, "在民宿院子里弹了《晴天》。", "民宿叫什么？", True),
    (NAME, "我大学室友叫王芳。", "室友叫什么名字？", True),
    (NAME, "我明天约领导喝咖啡聊聊。", "领导叫什么名字？", False),
    (None, "anything at all", "What kind of salad?", True),
])
def test_whether_a_text_holds_an_answer_of_that_kind(kind, text, question, holds):
    assert holds_answer(kind, text, question) is holds


def test_a_close_semantic_match_without_the_number_asked_for_is_not_relevant():
    from vaultmem.models import Hit, IndexDoc
    from vaultmem.retrieve import is_relevant

    def found(text):
        return Hit(doc=IndexDoc(id="n.md", path="n.md", kind="note", text=text), score=1.0,
                   channel="semantic", similarity=0.8, close=True)

    asked = "How much does Ben's woodworking class cost?"
    assert not is_relevant(found("Ben is taking a woodworking class on Saturdays."), asked, 0.4)
    assert is_relevant(found("Ben's woodworking class is 120 dollars a month."), asked, 0.4)
    assert is_relevant(found("Ben is taking a woodworking class on Saturdays."), "What is Ben learning?", 0.4)
