"""Recall of what was said: dates as terms, a session's neighbours, the turn that answers."""

import pytest

from vaultmem.analysis import find_dates, query_tokens

pytestmark = pytest.mark.usefixtures("both_engines")  # every test on Whoosh and on tantivy

TURN = """---
name: "{speaker}, {session}, turn {turn}"
description: "{speaker} on {day}: {text}"
type: episode
author_kind: user
said: {day}
created: {day}T12:00:00Z
session: {session}
turn: {turn}
tags: [chat]
---
{text}
"""


def write_turns(root, session, day, turns):
    """One note per turn of a conversation, as a chat import writes them."""
    for n, (speaker, text) in enumerate(turns, 1):
        (root / "memories" / f"{session}-t{n:02d}.md").write_text(
            TURN.format(speaker=speaker, session=session, turn=n, day=day, text=text), encoding="utf-8")


def ids(hits):
    return [h.doc.id for h in hits]


# -- dates ------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, terms", [
    ("我5月4号去了趟杭州", ["@05-04"]),
    ("2023年5月4日，晴", ["@2023-05-04", "@05-04", "@2023-05"]),
    ("we met on 4 May 2023", ["@2023-05-04", "@05-04", "@2023-05"]),
    ("May 4th, 2023 it was", ["@2023-05-04", "@05-04", "@2023-05"]),
    ("I started on May 4", ["@05-04"]),
    ("back in May 2023", ["@2023-05"]),
    ("2023年5月的事", ["@2023-05"]),
    ("said: 2023-05-04T12:00:00Z", ["@2023-05-04", "@05-04", "@2023-05"]),
])
def test_dates_written_either_way_become_the_same_terms(text, terms):
    assert [t for _s, _e, found in find_dates(text) for t in found] == terms


def test_relative_days_count_from_the_notes_day_and_numbers_are_not_dates():
    assert find_dates("昨天我们聊了", "2023-05-08")[0][2][0] == "@2023-05-07"
    assert find_dates("what did you do yesterday?", "2023-05-08")[0][2][0] == "@2023-05-07"
    assert find_dates("昨天我们聊了") == []  # no day to count from
    # weekdays of this or the last week (2023-05-10 is a Wednesday; weeks start on Monday)
    assert find_dates("上周五我去了医院", "2023-05-10")[0][2][0] == "@2023-05-05"
    assert find_dates("这周三开会", "2023-05-10")[0][2][0] == "@2023-05-10"
    assert find_dates("上个星期二", "2023-05-10")[0][2][0] == "@2023-05-02"
    assert find_dates("last Friday we went hiking", "2023-05-10")[0][2][0] == "@2023-05-05"
    assert find_dates("last Wednesday", "2023-05-10")[0][2][0] == "@2023-05-03"
    assert find_dates("周五见", "2023-05-10") == []  # which Friday is not said
    assert find_dates("you may go 4 times, turn 12, 32 of 40") == []
    assert find_dates("2023-13-45 and 2月30日") == []  # not days


def test_a_questions_date_is_one_term_and_its_digits_are_gone():
    terms = query_tokens("小雨5月4号去了哪里？")
    assert "@05-04" in terms and "5" not in terms and "4" not in terms
    terms = query_tokens("What did Melanie do on 8 May 2023?")
    assert "@2023-05-08" in terms and "8" not in terms and "2023" not in terms and "may" not in terms


def small_talk(root, days=("2023-04-02", "2023-04-20", "2023-05-30", "2023-07-01")):
    """Sessions of other days, as a real history has them."""
    for k, day in enumerate(days):
        write_turns(root, f"talk{k}", day, [("小雨", "早上好呀，今天有点累"), ("阿哲", "多休息，晚上早点睡"),
                                            ("小雨", "去了趟超市，买了水果"), ("阿哲", "不错，记得吃早饭")])


def test_a_chinese_date_in_the_question_meets_the_notes_day(vault):
    small_talk(vault.root)
    write_turns(vault.root, "zh-a", "2023-05-04", [("小雨", "今天去了趟杭州，西湖人好多"), ("阿哲", "好玩吗？")])
    write_turns(vault.root, "zh-b", "2023-06-10", [("小雨", "周末又去杭州了，这次去了灵隐寺"), ("阿哲", "真羡慕")])
    for question in ("小雨5月4号去杭州做了什么？", "小雨2023年5月4日去杭州做了什么", "小雨5月4日在杭州"):
        assert ids(vault.search(question))[0] == "memories/zh-a-t01.md", question
    # the other session's visit wins when its date is asked for
    assert ids(vault.search("小雨6月10号去杭州做了什么？"))[0] == "memories/zh-b-t01.md"


def test_an_english_date_meets_a_date_written_in_chinese_and_the_reverse(vault):
    write_turns(vault.root, "zh-c", "2023-05-20", [("小雨", "我5月4号去了趟杭州，吃了片儿川")])
    write_turns(vault.root, "en-c", "2023-06-01", [("Mel", "On May 4 I finally went to the pottery class")])
    write_turns(vault.root, "en-d", "2023-06-02", [("Mel", "The pottery class was fun, I might go again")])
    assert ids(vault.search("杭州 4 May"))[0] == "memories/zh-c-t01.md"
    assert ids(vault.search("pottery class 5月4日"))[0] == "memories/en-c-t01.md"


def test_a_date_alone_does_not_flood_the_answer_out(vault):
    """Eight turns of the asked-for day share its date; the one turn of another day that
    holds the question's words is still among the first."""
    write_turns(vault.root, "en-a", "2023-05-08", [("Mel", f"just chatting about nothing much, part {n}")
                                                   for n in range(8)])
    write_turns(vault.root, "en-b", "2023-05-09", [("Caro", "The charity run for the animal shelter went great")])
    found = ids(vault.search("What happened at the charity run on 8 May 2023?"))
    assert found[0] == "memories/en-b-t01.md"


def test_numbers_in_the_question_no_longer_match_turn_numbers(vault):
    write_turns(vault.root, "en-a", "2023-05-08", [("Mel", "hi")] * 11 + [("Mel", "small talk again")])
    write_turns(vault.root, "en-b", "2023-05-09", [("Caro", "I adopted a cat on 12 May 2023, she is called Miso")])
    found = ids(vault.search("What did Caro adopt on 12 May 2023?"))
    assert found[0] == "memories/en-b-t01.md"


# -- a session's neighbours ---------------------------------------------------------------------
CHAT = [
    ("Mel", "Guess what, I signed up for something new this week!"),
    ("Caro", "Ooh, tell me! Is it the pottery workshop you mentioned?"),
    ("Mel", "Yes! Every Saturday morning at the community centre."),
    ("Caro", "That sounds lovely, send pictures."),
    ("Mel", "Will do. How is your garden doing?"),
    ("Caro", "The tomatoes are finally red."),
]


def test_a_turn_that_answers_without_the_questions_words_is_found_by_its_neighbours(vault):
    write_turns(vault.root, "en-s1", "2023-05-08", CHAT)
    write_turns(vault.root, "en-s2", "2023-05-15", [("Mel", "Saturday morning I sleep in, always"),
                                                      ("Caro", "Same here, community life is exhausting")])
    found = ids(vault.search("When does Mel go to the pottery workshop?"))
    assert "memories/en-s1-t03.md" in found[:3]  # "Every Saturday morning…" holds neither word


def test_neighbours_follow_edits_and_deletions_as_a_fresh_index_would(vault):
    from vaultmem.index.store import IndexStore

    write_turns(vault.root, "en-s1", "2023-05-08", CHAT)
    question = "Mel pottery workshop"
    vault.search(question)
    # the neighbour that holds "pottery workshop" is rewritten; another is deleted
    (vault.root / "memories" / "en-s1-t02.md").write_text(TURN.format(
        speaker="Caro", session="en-s1", turn=2, day="2023-05-08", text="Ooh, tell me! Is it the salsa class?"),
        encoding="utf-8")
    (vault.root / "memories" / "en-s1-t05.md").unlink()
    updated = [(h.doc.id, round(h.score, 6), h.doc.near) for h in vault.search(question)]
    vault.index.rebuild()
    fresh = [(h.doc.id, round(h.score, 6), h.doc.near) for h in vault.search(question)]
    assert updated == fresh
    near = {i: n for i, _s, n in fresh}
    assert "pottery" not in near.get("memories/en-s1-t03.md", "")
    # a note moved to another session leaves its old neighbours
    (vault.root / "memories" / "en-s1-t06.md").write_text(TURN.format(
        speaker="Caro", session="en-s9", turn=1, day="2023-05-08", text="The tomatoes are finally red."),
        encoding="utf-8")
    updated = sorted((h.doc.id, h.doc.near) for h in vault.search("tomatoes Saturday salsa"))
    IndexStore(vault.root).rebuild()
    vault.index.close()
    assert updated == sorted((h.doc.id, h.doc.near) for h in vault.search("tomatoes Saturday salsa"))


# -- the turn that answers, not the one that asks ------------------------------------------------
def test_the_turn_that_answers_beats_the_turn_that_asks(vault):
    small_talk(vault.root)
    write_turns(vault.root, "zh-q", "2023-05-06", [("阿哲", "你喜欢哪种菜系呢？"), ("小雨", "我比较喜欢川菜和粤菜，辣一点的最好"),
                                                  ("阿哲", "那下次一起去吃川菜")])
    found = ids(vault.search("小雨喜欢哪种菜系？"))
    assert found.index("memories/zh-q-t02.md") < found.index("memories/zh-q-t01.md")


SPOKEN = TURN.replace("author_kind: user\n", 'author: "{speaker}"\nauthor_kind: user\n')  # as an importer writes


def spoken_turns(root, session, day, turns):
    for n, (speaker, text) in enumerate(turns, start=1):
        (root / "memories" / f"{session}-t{n:02d}.md").write_text(
            SPOKEN.format(speaker=speaker, session=session, turn=n, day=day, text=text), encoding="utf-8")


def replies_of(vault, question):
    """The (turn that asks, its reply) pairs the rule puts in that order for ``question``."""
    from vaultmem.index import Filters
    from vaultmem.ranker import answering_replies
    from vaultmem.retrieve import learned_candidates, unit_weights

    cands, _rows, _rules = learned_candidates(vault.index, question, Filters())
    return {(cands[a].doc.id, cands[r].doc.id) for a, r in answering_replies(cands, unit_weights(vault.index,
                                                                                                   question)).items()}


def test_the_reply_comes_before_a_turn_that_asks_the_question_in_passing(vault):
    """"By the way, what do you usually drink at breweries?" holds every word of "What
    does Leah usually drink at breweries?" and answers nothing: Leah's reply does. The
    reply is put just before the turn that asks, with that turn's score when it is higher,
    and shown once. No reply is put before a turn followed by the same speaker's, a turn
    whose question holds no word of the search ("How was the hike?"; a "?" in a link is no
    question), nor — the question naming Leah — a turn of Leah's that answers and asks
    back: Marcus's reply is about him."""
    small_talk(vault.root)
    spoken_turns(vault.root, "brew", "2023-06-03", [
        ("Marcus", "The truck was slammed today."),
        ("Marcus", "Spinach, clever. By the way, what do you usually drink at breweries? I want to pair the menu."),
        ("Leah", "Honestly I'm a sour beer person. The more it tastes like grapefruit, the happier I am."),
        ("Marcus", "Noted, I'll tell the brewery folks.")])
    spoken_turns(vault.root, "solo", "2023-06-10", [
        ("Marcus", "Is the brewery open on Sundays? Usually the breweries close early."),
        ("Marcus", "Anyway, I usually drink sour beer there.")])
    spoken_turns(vault.root, "other", "2023-06-17", [
        ("Marcus", "How was the hike? We went to two breweries after work, see https://brew.example/list?drink=ipa"),
        ("Leah", "Long, and I usually drink nothing but water on a hike.")])
    spoken_turns(vault.root, "back", "2023-06-24", [
        ("Leah", "At breweries I usually drink a pale ale. What do you drink there? Tell me."),
        ("Marcus", "Stouts, mostly, I drink the dark ones.")])
    question = "What does Leah usually drink at breweries?"
    hits = vault.search(question)
    found = ids(hits)
    assert found.index("memories/brew-t03.md") == found.index("memories/brew-t02.md") - 1, found
    assert len(found) == len(set(found))
    assert hits[found.index("memories/brew-t03.md")].score >= hits[found.index("memories/brew-t02.md")].score
    assert replies_of(vault, question) == {("memories/brew-t02.md", "memories/brew-t03.md")}
    # asking no one in particular, the ask-back's reply may come first
    assert ("memories/back-t01.md", "memories/back-t02.md") in replies_of(vault, "What do you drink at breweries?")


def test_question_words_are_no_words_of_the_search_and_a_chain_of_replies_keeps_its_order(vault):
    """"你晚上吃什么？" shares only its question words with "小雨去超市买了什么？": it asks
    nothing of it, and the answer stays first. When the reply asks the question back and
    is answered in turn, all three come in the order that answers: the last reply first."""
    from vaultmem.ranker import replies_first

    small_talk(vault.root)
    spoken_turns(vault.root, "shop", "2023-06-03", [
        ("小雨", "今天去超市买了草莓和牛奶。对了，你晚上吃什么？我先去做饭了。"),
        ("阿哲", "我晚上吃面条，超市的打折面条。"), ("小雨", "好的")])
    assert ids(vault.search("小雨去超市买了什么？"))[0] == "memories/shop-t01.md"
    assert replies_of(vault, "小雨去超市买了什么？") == replies_of(vault, "去超市买了什么？") == set()
    # (pure) turns 0 → 1 → 2 each answering the one before: whichever the model put first
    assert replies_first([0, 1, 2, 3], {0: 1, 1: 2}) == ([2, 1, 0, 3], {1: 0, 2: 1})
    assert replies_first([3, 1, 0, 2], {0: 1, 1: 2})[0] == [3, 2, 1, 0]
    assert replies_first([2, 0, 1], {0: 1, 1: 2})[0] == [2, 1, 0]


def test_advice_given_in_reply_to_the_named_persons_statement_may_lead(vault):
    """A reply holds none of the question's words when it answers what the person the
    question names said: "苏苏练倒车入库有什么窍门？" is answered by 周扬's turn after 苏苏's
    "倒车入库最难". Such a reply may lead, as the reply to a question does. The other
    speaker's reply to a turn of theirs whose own text holds no word of the question (a
    date is no word), a turn after the same speaker's, and any reply when the question
    names no one still follow every turn that holds a word of the question."""
    from vaultmem.index import Filters
    from vaultmem.retrieve import learned_candidates

    small_talk(vault.root)
    spoken_turns(vault.root, "drive", "2023-05-06", [
        ("苏苏", "科目一我过了，98分！"), ("周扬", "厉害！比我当年还高。"),
        ("苏苏", "接下来是科目二，听说倒车入库最难。"),
        ("周扬", "练的时候盯住后视镜里的库角，看到线和车身重合就打满方向盘，多练几次就有感觉了。"),
        ("苏苏", "好，我周末就去驾校。")])
    spoken_turns(vault.root, "park", "2023-05-20", [
        ("苏苏", "今天在商场停车，倒车倒了三次才进去。"), ("苏苏", "真丢人。"), ("周扬", "哈哈，慢慢来。")])
    reply, wordy = "memories/drive-t04.md", "memories/park-t01.md"  # (倒车: a word of the question)
    found = ids(vault.search("苏苏练倒车入库有什么窍门？"))
    assert found[0] == reply and found.index("memories/drive-t02.md") > found.index(wordy), found
    found = ids(vault.search("倒车入库有什么窍门？"))
    assert found.index(reply) > found.index(wordy), found

    def may_lead(question):  # the replies the rule lets lead
        cands, _rows, _rules = learned_candidates(vault.index, question, Filters())
        return {c.doc.id for c in cands if c.after_named}

    assert may_lead("苏苏练倒车入库有什么窍门？") == {reply}
    assert may_lead("苏苏5月6号练倒车入库有什么窍门？") == {reply}  # not 周扬's "厉害！" after 苏苏's turn of that day
    assert may_lead("倒车入库有什么窍门？") == set()


# -- the relevance signal ------------------------------------------------------------------------
FACTS = {
    "backend-port": "后端端口固定8080，本地、预发和生产环境一致。",
    "deploy": "Deploys go through Argo CD: merge to main, then sync the prod cluster by hand.",
    "email": "Transactional email is sent through Postmark; marketing mail through Mailchimp.",
    "oncall": "The on-call rotation changes every Monday at 10:00; handover in #ops.",
}


@pytest.fixture
def facts(vault):
    small_talk(vault.root)
    for slug, text in FACTS.items():
        (vault.root / "memories" / f"{slug}.md").write_text(f"---\nname: {slug}\ntype: fact\n---\n{text}\n",
                                                           encoding="utf-8")
    return vault


def test_search_says_which_hits_pass_the_relevance_cut_and_when_nothing_does(facts):
    hits = facts.search("后端端口是多少")
    assert hits[0].doc.id == "memories/backend-port.md" and hits[0].relevant and not hits.no_memory
    data = hits.to_dict("后端端口是多少")
    assert data["relevant"] >= 1 and data["no_memory"] is False and data["hits"][0]["relevant"] is True
    assert 0 < data["hits"][0]["relevance"] <= 1
    # "rotate" meets the on-call rotation, but the vault knows nothing of SSH keys or bastions
    hits = facts.search("How do we rotate the SSH keys for the bastion host?")
    assert hits and hits.no_memory and not any(h.relevant for h in hits)
    assert hits.to_dict("q")["no_memory"] is True
    # 短信 is a word the vault lacks, 服务 one it has
    assert facts.search("短信验证码服务商是哪家").no_memory


def test_a_note_about_the_question_without_its_number_or_name_is_not_an_answer(vault):
    write_turns(vault.root, "s1", "2023-05-04", [
        ("Ben", "Also, I'm taking a woodworking class on Saturdays now, joinery and hand tools."),
        ("Ana", "That sounds great, the kitchen table you made was lovely."),
        ("Ben", "My parents' anniversary is in June and my brother wants a surprise dinner."),
    ])
    write_turns(vault.root, "s2", "2023-05-11", [
        ("王蕾", "嗯，我明天约领导喝咖啡聊聊。"),
        ("小北", "好啊，聊完告诉我。"),
    ])
    asked = {
        "How much does Ben's woodworking class cost?": "memories/s1-t01.md",
        "What is the name of Ben's brother?": "memories/s1-t03.md",
        "王蕾的领导叫什么名字？": "memories/s2-t01.md",
    }
    for question, about in asked.items():
        hits = vault.search(question)
        # the note that is about it is still found first, but it is not called an answer
        assert hits[0].doc.id == about, question
        assert hits.no_memory and not hits[0].relevant, (question, hits[0].relevance)
    # the same notes answer questions of another shape, and a note with the number answers
    assert vault.search("Which days is Ben's woodworking class?")[0].relevant
    (vault.root / "memories" / "s1-t01.md").write_text(
        (vault.root / "memories" / "s1-t01.md").read_text(encoding="utf-8").replace(
            "joinery and hand tools.", "joinery and hand tools, 120 dollars a month."), encoding="utf-8")
    vault.refresh_index()
    hits = vault.search("How much does Ben's woodworking class cost?")
    assert hits[0].doc.id == "memories/s1-t01.md" and hits[0].relevant and not hits.no_memory


def test_the_cut_is_a_setting(facts):
    from vaultmem import Vault

    config = facts.root / ".vaultmem" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("min_relevance: 0.4", "min_relevance: 0.0"),
                      encoding="utf-8")
    loose = Vault(facts.root)
    assert not loose.search("How do we rotate the SSH keys for the bastion host?").no_memory
    assert loose.search("How do we rotate the SSH keys?").min_relevance == 0.0


def test_the_cli_says_no_memory_of_this_and_marks_weak_hits(facts, cli):
    out = cli("--vault", facts.root, "search", "How do we rotate the SSH keys for the bastion host?")
    assert out.exit_code == 0
    assert out.output.startswith("no memory of this") and "(weak)" in out.output
    data = cli("--vault", facts.root, "search", "How do we rotate the SSH keys for the bastion host?", "--json").output
    import json

    got = json.loads(data)
    assert got["no_memory"] is True and got["relevant"] == 0 and got["hits"]
    out = cli("--vault", facts.root, "search", "Argo CD deploys")
    assert "no memory of this" not in out.output and "(weak)" not in out.output.splitlines()[0]


def test_a_long_chinese_turn_is_briefed_by_the_part_that_answers(vault):
    from vaultmem.analysis import estimate_tokens

    long = ("今天上午我们开了很长的会，讨论了很多事情，包括下个季度的预算、新同事的入职安排、办公室搬迁的时间表，"
            "还有最重要的一件事：后端端口固定8080，本地、预发和生产环境一致。改端口要同步改网关的 upstream 配置。"
            "会后大家一起去吃了午饭，吃的是川菜，味道不错，下午继续讨论了招聘计划和团建的安排。")
    (vault.root / "memories" / "meeting.md").write_text(f"---\nname: 周会\ntype: episode\n---\n{long}\n",
                                                       encoding="utf-8")
    b = vault.brief("lee", "后端端口是多少", tokens=1500)
    line = next(x for x in b.markdown.splitlines() if "meeting" in x)
    assert "后端端口固定8080" in line and estimate_tokens(line) < estimate_tokens(long) * 0.75


def test_turns_dated_by_their_session_are_neighbours_without_a_session_key(vault):
    """An import that gives each turn its session's time (said) and no session key."""
    for n, (speaker, text) in enumerate(CHAT, 1):
        (vault.root / "memories" / f"chat-{n:02d}.md").write_text(
            f"---\nname: {speaker} {n}\ntype: episode\nsource: chat-import\nsaid: 2023-05-08T13:56:00Z\n"
            f"created: 2023-06-01T10:00:{n:02d}Z\n---\n{text}\n", encoding="utf-8")
    (vault.root / "memories" / "other.md").write_text(
        "---\nname: other\ntype: episode\nsource: chat-import\nsaid: 2023-05-09T09:00:00Z\n---\n"
        "Saturday morning I sleep in, always\n", encoding="utf-8")
    hits = {h.doc.id: h for h in vault.search("pottery workshop Saturday morning")}
    assert "pottery workshop" in hits["memories/chat-03.md"].doc.near
    assert hits["memories/other.md"].doc.near == ""


def test_a_new_vault_has_the_cut_and_an_older_vaults_setting_still_counts(tmp_path):
    from vaultmem import Vault

    v, _ = Vault.init(tmp_path / "fresh", lang="en", orchestrator="orch")
    assert "min_relevance: 0.4" in (v.root / ".vaultmem" / "config.yaml").read_text(encoding="utf-8")
    assert v.config.min_relevance == 0.4
    config = v.root / ".vaultmem" / "config.yaml"
    import re

    text = re.sub(r"\nsearch:\n(?:  .*\n)*", "\n", config.read_text(encoding="utf-8"))  # as a vault made before
    text = text.replace("  min_relevance: 0.25\n", "")
    assert "\n  min_relevance:" not in text
    config.write_text(text.replace("brief:\n", "brief:\n  min_coverage: 0.35\n", 1), encoding="utf-8")
    assert Vault(v.root).config.brief_min_relevance == 0.35 and Vault(v.root).config.min_relevance == 0.4


def test_a_note_scoped_to_a_role_lends_its_text_to_no_other_roles_neighbour(vault):
    write_turns(vault.root, "s", "2023-05-08", [("Mel", "plain small talk"), ("Caro", "the vault code is 4711"),
                                                ("Mel", "more small talk")])
    scoped = vault.root / "memories" / "s-t02.md"
    scoped.write_text(scoped.read_text(encoding="utf-8").replace("type: episode", "type: episode\nscope: agent\n"
                                                                  "agent: 安全审计"), encoding="utf-8")
    assert [h.doc.id for h in vault.search("vault code", agent="前端审查")] == []
    near = {h.doc.id: h.doc.near for h in vault.search("small talk")}
    assert "4711" not in near["memories/s-t01.md"] and "4711" not in near["memories/s-t03.md"]


def test_a_rebuild_fills_in_the_neighbours_exactly_as_analysing_the_note_afresh(vault):
    from vaultmem.index.fields import fields_of, with_neighbours
    from vaultmem.parse.records import records, session_neighbours

    write_turns(vault.root, "en-s1", "2023-05-08", CHAT)
    docs = [d for f in sorted((vault.root / "memories").glob("en-s1-*.md"))
            for d in records(f"memories/{f.name}", f.read_text(encoding="utf-8"))]
    before = [fields_of(d) for d in docs]
    changed = session_neighbours(docs)
    assert changed == list(range(len(CHAT)))
    assert all(with_neighbours(before[n], docs[n]) == fields_of(docs[n]) for n in changed)


def test_the_rules_read_past_the_first_hits_only_when_one_of_them_asks(vault):
    """Under the rules, a search reads the engine's first ``limit`` hits and stops there
    when none of them asks (nothing past them can pass them): its answer, at every limit,
    is the rules' order of the whole pool of candidates, the same hits and scores."""
    import random

    from vaultmem.index import Filters
    from vaultmem.index.store import IndexStore
    from vaultmem.retrieve import rule_order, search

    rng = random.Random(4)
    words = "cache redis timeout retry kafka queue deploy rollback 缓存 端口 超时".split()
    for s in range(30):
        turns = []
        for _t in range(rng.randint(2, 6)):
            said = " ".join(rng.choice(words) for _ in range(rng.randint(2, 7)))
            turns.append((rng.choice(["Ann", "Bo"]), said + ("?" if rng.random() < 0.3 else ".")))
        write_turns(vault.root, f"s{s:02d}", f"2023-05-{1 + s % 28:02d}", turns)
    for n in range(40):
        (vault.root / "memories" / f"plain-{n:02d}.md").write_text(
            "---\nname: plain\ndescription: x\ntype: fact\n---\n" + " ".join(rng.choice(words) for _ in range(9)) + "\n",
            encoding="utf-8")
    store = IndexStore(vault.root, ranking="rules")
    store.rebuild()
    asked = []
    real = store.search
    store.search = lambda terms, filters, limit, **kw: asked.append(limit) or real(terms, filters, limit, **kw)
    short = long_ = 0
    for q in ("kafka retry", "redis", "缓存 超时", "deploy rollback queue", "端口", "timeout cache kafka redis"):
        for limit in (1, 3, 10):
            asked.clear()
            got = [(h.doc.id, h.score) for h in search(store, q, Filters(), limit)]
            terms = query_tokens(q)
            pool = real(terms, Filters(), 2 * limit, text=q)
            want = [(d.id, s) for d, s, _d in rule_order(pool, terms, set(), None)[:limit]]
            assert got == want, (q, limit)
            short += asked == [limit]
            long_ += asked == [limit, 2 * limit]
    assert short and long_  # both ways were taken
    store.close()
