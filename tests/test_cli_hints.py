"""What a new user meets first: where the acting agent came from, finding the vault, a
role with no page yet, a query of common words only — each answered with what to do."""


import pytest
from conftest import out_json, vaultmem_in_process



def retained(vault) -> str:
    """An inbox item waiting for a human (a fact ella retained)."""
    r = vaultmem_in_process("--vault", vault.root, "retain", "--as", "ella", "-", "--json",
                            stdin="- {type: fact, text: 后端端口固定8080, author_kind: user}\n")
    assert r.returncode == 0, r.stderr
    return out_json(r)["items"][0]["id"]


# -- where the agent came from: --as or VAULTMEM_AGENT ------------------------------------------

def test_a_refusal_names_vaultmem_agent_when_the_agent_came_from_the_environment(vault):
    iid = retained(vault)
    r = vaultmem_in_process("--vault", vault.root, "review", "approve", iid, env={"VAULTMEM_AGENT": "lee"})
    assert r.returncode == 3
    assert "VAULTMEM_AGENT=lee is set" in r.stderr and "unset VAULTMEM_AGENT" in r.stderr
    assert "--as" not in r.stderr  # no --as was given
    r = vaultmem_in_process("--vault", vault.root, "--json", "config", "set", "brief.ratio", "0.2",
                            env={"VAULTMEM_AGENT": "lee"})
    err = out_json(r)["error"]
    assert r.returncode == 3 and "VAULTMEM_AGENT=lee is set" in err["hint"] and "--as" not in err["hint"]


def test_a_refusal_names_the_as_flag_when_the_agent_came_from_it(vault):
    iid = retained(vault)
    for args in (("review", "approve", iid, "--as", "lee"), ("--as", "lee", "review", "approve", iid)):
        r = vaultmem_in_process("--vault", vault.root, *args)
        assert r.returncode == 3
        assert "--as lee" in r.stderr and "without --as" in r.stderr
        assert "VAULTMEM_AGENT" not in r.stderr
    r = vaultmem_in_process("--vault", vault.root, "page", "ensure", "x", "--as", "ella")
    assert r.returncode == 3 and "only the orchestrator 'lee'" in r.stderr and "--as ella" in r.stderr


# -- finding the vault ----------------------------------------------------------------------------

def test_a_vault_option_inside_a_vault_names_the_enclosing_vault(vault):
    r = vaultmem_in_process("--vault", vault.root / "agents", "page", "list")
    assert r.returncode == 1
    assert f"inside the vault {vault.root}" in r.stderr
    assert "vaultmem init" not in r.stderr  # no vault nested in a vault
    r = vaultmem_in_process("page", "list", env={"VAULTMEM_VAULT": str(vault.root / "memories")})
    assert r.returncode == 1 and f"inside the vault {vault.root}" in r.stderr and "VAULTMEM_VAULT" in r.stderr


def test_a_missing_folder_is_said_to_be_missing_once(tmp_path):
    missing = tmp_path / "no-such-folder"
    r = vaultmem_in_process("--vault", missing, "page", "list")
    assert r.returncode == 1
    assert "does not exist" in r.stderr and "not a vault" not in r.stderr
    assert r.stderr.count(str(missing)) == 1, r.stderr
    r = vaultmem_in_process("page", "list", env={"VAULTMEM_VAULT": str(missing)})
    assert r.returncode == 1 and "VAULTMEM_VAULT" in r.stderr and r.stderr.count(str(missing)) == 1, r.stderr
    r = vaultmem_in_process("--json", "--vault", missing, "page", "list")
    assert out_json(r)["error"]["type"] == "vault_not_found" and out_json(r)["error"]["path"] == str(missing)


def test_a_folder_that_is_not_a_vault_still_suggests_init(tmp_path):
    (tmp_path / "plain").mkdir()
    r = vaultmem_in_process("--vault", tmp_path / "plain", "page", "list")
    assert r.returncode == 1 and "is not a vault" in r.stderr and "vaultmem init" in r.stderr


# -- a brief for a role that has no page yet ------------------------------------------------------

@pytest.mark.usefixtures("both_engines")
def test_a_brief_for_a_role_without_a_page_says_so_and_how_to_create_it(vault):
    r = vaultmem_in_process("--vault", vault.root, "brief", "no-such-role", "--task", "审查性能")
    assert r.returncode == 0
    assert "[记忆简报 - no-such-role]" in r.stdout  # still a brief: global memory is worth having
    assert "warning:" in r.stderr and "no page yet" in r.stderr
    assert "vaultmem dispatch no-such-role" in r.stderr and "vaultmem page ensure no-such-role" in r.stderr
    data = out_json(vaultmem_in_process("--vault", vault.root, "--json", "brief", "no-such-role",
                                        "--task", "审查性能"))
    assert data["page"] is None and any("no page yet" in w for w in data["warnings"])
    vaultmem_in_process("--vault", vault.root, "page", "ensure", "前端审查", "--as", "lee")
    r = vaultmem_in_process("--vault", vault.root, "brief", "前端审查", "--task", "审查性能")
    assert r.returncode == 0 and r.stderr == ""


# -- a query of common words only -----------------------------------------------------------------

@pytest.mark.usefixtures("both_engines")
@pytest.mark.parametrize("query", ["the of and", "What is it?"])
def test_a_query_of_common_words_only_says_why_nothing_matches(vault, query):
    vaultmem_in_process("--vault", vault.root, "remember", "What the port of the backend is: 8080", "--type", "fact")
    r = vaultmem_in_process("--vault", vault.root, "search", query)
    assert r.returncode == 0
    assert "common words" in r.stdout + r.stderr and "not indexed" in r.stdout + r.stderr
    data = out_json(vaultmem_in_process("--vault", vault.root, "--json", "search", query))
    assert data["hits"] == [] and any("common words" in w for w in data["warnings"])
    r = vaultmem_in_process("--vault", vault.root, "search", "zebra")
    assert "common words" not in r.stdout + r.stderr  # a real word that is not there: just no hits


# -- remember - (standard input) is documented -----------------------------------------------------

def test_remember_dash_reads_standard_input_and_says_so(vault):
    r = vaultmem_in_process("remember", "--help")
    assert "standard input" in " ".join(r.stdout.split())
    r = vaultmem_in_process("--vault", vault.root, "remember", "-", "--type", "fact", stdin="后端端口固定8080\n")
    assert r.returncode == 0 and (vault.root / "memories" / "后端端口固定8080.md").is_file()


# -- the config template says what happens ---------------------------------------------------------

def test_the_config_comment_on_the_orchestrator_says_what_other_agents_meet(vault):
    text = (vault.root / ".vaultmem" / "config.yaml").read_text(encoding="utf-8")
    comment = " ".join(text.split("\norchestrator:", 1)[0].rsplit("\n\n", 1)[1].replace("#", "").split())
    assert "becomes a proposal in inbox/" in comment and "creating a page is refused" in comment
    assert vaultmem_in_process("--vault", vault.root, "page", "ensure", "前端审查", "--as", "lee").returncode == 0
    r = vaultmem_in_process("--vault", vault.root, "--json", "page", "add", "前端审查", "列表要虚拟化",
                            "--as", "ella")
    assert r.returncode == 0 and out_json(r)["action"] == "propose"  # a proposal, not a refusal
    assert len(list((vault.root / "inbox").glob("i-*.md"))) == 1
    assert vaultmem_in_process("--vault", vault.root, "page", "ensure", "后端架构", "--as", "ella").returncode == 3


def test_a_proposal_made_only_because_of_vaultmem_agent_says_so(vault):
    r = vaultmem_in_process("--vault", vault.root, "remember", "后端端口固定8080", "--type", "fact",
                            env={"VAULTMEM_AGENT": "lee"})
    assert r.returncode == 0 and "waiting for review" in r.stdout
    assert "note: VAULTMEM_AGENT=lee is set" in r.stderr and "unset VAULTMEM_AGENT" in r.stderr
    r = vaultmem_in_process("--vault", vault.root, "remember", "前端用pnpm", "--type", "fact", "--as", "lee")
    assert r.returncode == 0 and "waiting for review" in r.stdout and r.stderr == ""  # --as says it already
    r = vaultmem_in_process("--vault", vault.root, "--json", "remember", "日志保留30天", "--type", "fact",
                            env={"VAULTMEM_AGENT": "lee"})
    assert r.returncode == 0 and out_json(r)["action"] == "propose" and r.stderr == ""
