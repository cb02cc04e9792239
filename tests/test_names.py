import unicodedata

import pytest

from vaultmem.errors import NameRefused
from vaultmem.names import check_name, check_new_name, collision_key, slugify


@pytest.mark.parametrize("name", ["前端审查", "code-reviewer", "后端 架构", "Ella", "agent.v2", "a" * 236, "审" * 78])
def test_safe_names_are_accepted(name):
    assert check_name(name) == name


def test_names_are_nfc_normalised():
    decomposed = "Cafe\u0301"  # 'e' + combining acute (NFD, as macOS stores it)
    assert check_name(decomposed) == "Caf\u00e9"


@pytest.mark.parametrize(
    "name, why",
    [
        ("", "empty"),
        ("../etc", ".."),
        ("a/b", "path separator"),
        ("a\\b", "path separator"),
        ("..", ".."),
        ("ok\x00", "control"),
        ("line\nbreak", "control"),
        ("zero\u200bwidth", "invisible"),
        ("bidi\u202etxt", "invisible"),
        ("isolate\u2066x", "invisible"),
        ("bom\ufeff", "invisible"),
        ("CON", "reserved"),
        ("nul.md", "reserved"),
        ("com1", "reserved"),
        ("LPT9.txt", "reserved"),
        ("trailing.", "ends with a dot"),
        ("trailing ", "space"),
        (" leading", "space"),
        (".hidden", "starts with a dot"),
        ("x" * 237, "bytes"),  # the temp file ".<name>.md.vmtmp-xxxxxxxx" must fit in 255 bytes
        ("审" * 79, "bytes"),
        (".", "current folder"),
        ("rev\u034f", "invisible"),  # combining grapheme joiner
        ("\u3164", "invisible"),  # Hangul filler
        ("a\u2800b", "invisible"),  # braille blank
        ("x\ufe0f", "invisible"),  # variation selector
        ("\u0301abc", "combining mark"),
        ("a:b", "colon"),
        ("a|b", "Obsidian"),
        ("a#b", "Obsidian"),
        ("wide\u3000space", "unusual space"),
    ],
)
def test_unsafe_names_are_refused_with_a_reason(name, why):
    with pytest.raises(NameRefused) as err:
        check_name(name, "role name")
    assert why in err.value.message
    assert "role name" in err.value.message


@pytest.mark.parametrize("existing, new", [("Frontend", "frontend"), ("ReviewER", "reviewer"), ("Ａgent", "Agent"),
                                           ("Caf\u00e9", "CAFE\u0301")])
def test_case_and_width_collisions_are_refused(existing, new):
    with pytest.raises(NameRefused) as err:
        check_new_name(new, [existing])
    assert existing in err.value.message or existing in (err.value.hint or "")


def test_an_ascii_name_collides_as_its_full_folded_form_says():
    """collision_key folds an ASCII name by lowering it (NFC and NFKC leave ASCII as it
    is): the same key as the full fold for every ASCII character and mixed names."""
    def full(name):
        return unicodedata.normalize("NFKC", unicodedata.normalize("NFC", name)).casefold()

    names = [chr(c) for c in range(128)] + ["ReviewER", "Agent.V2", "A-b_C~d", "", "Ａgent", "Caf\u00e9", "ß", "ǅ"]
    for name in names:
        assert collision_key(name) == full(name), repr(name)


def test_exact_existing_name_is_not_a_collision():
    assert check_new_name("前端审查", ["前端审查", "后端架构"]) == "前端审查"


@pytest.mark.parametrize(
    "text, slug",
    [("Backend port is 8080!", "backend-port-is-8080"), ("后端端口固定8080", "后端端口固定8080"),
     ("  --  ", "note"), ("React 18 + TypeScript 严格模式", "react-18-typescript-严格模式")],
)
def test_slugify_keeps_words_and_cjk(text, slug):
    assert slugify(text) == slug


def test_slugify_cuts_long_text_at_a_word():
    slug = slugify("word " * 40)
    assert len(slug) <= 60 and not slug.endswith("-") and slug.startswith("word-word")


@pytest.mark.parametrize("name", [
    "ghp_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWx12", "ｇｈｐ＿Ａｂ１Ｃｄ２Ｅｆ３Ｇｈ４Ｉｊ５Ｋｌ６Ｍｎ７Ｏｐ８Ｑｒ９Ｓｔ０ＵｖＷｘ１２",
    "AKIAIOSFODNN7EXAMPLE", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "sk-proj-Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWx12",
])
def test_a_name_that_reads_like_a_secret_is_refused_without_repeating_it(name):
    """The name check's own cheap gate lets through to the detector every name the
    detector's gate would read; the refusal never quotes the name."""
    from vaultmem import guard
    from vaultmem.names import _MAYBE_SECRET  # the gate this module keeps for itself

    import unicodedata
    assert guard.might_hold_secret(name) and _MAYBE_SECRET.search(unicodedata.normalize("NFKC", name))
    with pytest.raises(NameRefused) as err:
        check_name(name, "role name", field="role")
    assert "reads like a secret" in err.value.message and name not in str(err.value) and err.value.field == "role"


def test_a_plain_name_is_checked_without_loading_the_secret_detector():
    import subprocess
    import sys

    code = ("import sys; from vaultmem.names import check_name\n"
            "for n in ('前端审查', 'code-reviewer', 'backend', 'infra-sre'): check_name(n)\n"
            "print('vaultmem.guard' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_an_unprintable_name_is_shown_with_each_character_escaped_once():
    """An escape character in an agent's name is shown as \\x1b, once: the message is
    what a person reads, not Python's picture of an already escaped text."""
    with pytest.raises(NameRefused) as err:
        check_name("a\x1b[31mb", "agent name")
    assert err.value.message.startswith("the agent name 'a\\x1b[31mb' is refused: it contains the control")
    with pytest.raises(NameRefused) as err:
        check_name("../x", "role name")
    assert err.value.message.startswith("the role name '../x' is refused")
