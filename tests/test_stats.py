"""`vaultmem stats` (counts and the observability figures) and the brief's one hop of
links — real vaults, the real CLI and the usage data real briefs and searches write."""

import datetime as dt

from conftest import git, out_json

from vaultmem import usage


def vm(cli, vault, *args, agent=None):
    return cli("--vault", vault.root, *(["--as", agent] if agent else []), *args)


def remember(cli, vault, text, *args, agent=None):
    r = vm(cli, vault, "remember", text, *args, "--json", agent=agent)
    assert r.exit_code == 0, r.output
    return out_json(r)


def test_stats_counts_notes_pages_waiting_work_logs_and_the_index(cli, en_vault):
    v = en_vault
    remember(cli, v, "The billing service listens on port 8443.", "--type", "fact", "--name", "billing port")
    remember(cli, v, "We chose Postgres over MySQL.", "--type", "decision", "--name", "database")
    remember(cli, v, "Ship on Fridays is fine.", "--type", "preference", "--name", "ship days")
    assert vm(cli, v, "forget", "ship-days").exit_code == 0
    remember(cli, v, "Use pnpm, never npm.", "--type", "preference", agent="orch")  # an agent's: waits for review
    assert vm(cli, v, "page", "ensure", "frontend").exit_code == 0
    assert vm(cli, v, "page", "add", "frontend", "Lazy-load the charts.").exit_code == 0
    assert vm(cli, v, "keys", "new", "orch").exit_code == 0
    assert vm(cli, v, "log", "append", "--summary", "Is the billing port fixed?", "--type", "question",
              agent="orch").exit_code == 0
    assert vm(cli, v, "search", "billing port").exit_code == 0  # builds the index
    r = vm(cli, v, "stats", "--json")
    assert r.exit_code == 0, r.output
    s = out_json(r)
    assert s["notes"]["active"] == 2 and s["notes"]["by_type"] == {"decision": 1, "fact": 1}
    assert s["notes"]["by_status"] == {"active": 2, "archived": 1}
    page = next(p for p in s["pages"] if p["role"] == "frontend")
    assert page["entries"]["work"] == 1 and page["over_budget"] == [] and page["bytes"] > 0
    assert s["waiting"] == {"inbox": 1, "delegations": 0}
    assert s["logs"]["orch"]["live"] == 1
    assert s["index"]["bytes"] > 0 and s["index"]["engine"] in ("whoosh", "tantivy")
    assert s["recall"]["questions"] == 2  # the search, and the log's question
    text = vm(cli, v, "stats").output
    assert "notes: 2 active" in text and "waiting for a human: 1 inbox items" in text


def test_recall_hit_rate_counts_briefs_whose_cited_memory_was_used_afterwards(cli, en_vault):
    v = en_vault
    remember(cli, v, "The billing service listens on port 8443.", "--type", "fact", "--name", "billing port")
    remember(cli, v, "Staging deploys run at noon.", "--type", "fact", "--name", "staging deploys")
    # two briefs cite memory; only the first one's note is looked up again afterwards
    assert vm(cli, v, "brief", "orch", "--task", "billing service port").exit_code == 0
    assert vm(cli, v, "brief", "orch", "--task", "when do staging deploys run").exit_code == 0
    assert vm(cli, v, "search", "billing service port").exit_code == 0
    s = out_json(vm(cli, v, "stats", "--json"))["recall"]
    assert s["briefs"] == 2 and s["briefs_citing"] == 2 and s["briefs_used"] == 1 and s["hit_rate"] == 0.5
    # a note confirmed after the brief counts as used too
    note = v.root / "memories" / "staging-deploys.md"
    later = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = note.read_text(encoding="utf-8")
    start = text.index("confirmed:")
    note.write_text(text[:start] + f"confirmed: {later}" + text[text.index("\n", start):], encoding="utf-8")
    assert out_json(vm(cli, v, "stats", "--json"))["recall"]["hit_rate"] == 1.0


def test_a_brief_counts_as_used_only_when_its_note_is_searched_later():
    """Of each cited note, any search after the brief counts — the last one decides, an
    earlier one or one at the same instant does not (stats.recall_figures)."""
    from vaultmem.stats import recall_figures

    def at(minute):
        return dt.datetime(2026, 5, 8, 12, minute, tzinfo=dt.timezone.utc)

    def rec(minute, via, *ids):
        return {"t": at(minute), "via": via, "ids": list(ids), "q": None, "agent": None}

    records = [rec(5, "search", "a", "c"), rec(20, "search", "a", "e"), rec(5, "search", "e"),  # (in any order)
               rec(10, "brief", "a"), rec(10, "brief", "b"), rec(10, "search", "b"), rec(10, "brief", "c"),
               rec(10, "brief", "e"), rec(30, "search", "d")]
    got = recall_figures(records, {}, [])
    assert (got["briefs"], got["briefs_citing"], got["briefs_used"], got["searches"]) == (4, 4, 2, 5)


def test_repeated_questions_are_those_asked_again_in_a_later_session(cli, en_vault):
    v = en_vault
    remember(cli, v, "The billing service listens on port 8443.", "--type", "fact", "--name", "billing port")
    # yesterday's session asked it (recorded as a brief records it), today's asks it again in other words order
    usage.record_use(v.root, [], "brief", when=dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=1),
                     question="which port does the billing service use", agent="orch")
    assert vm(cli, v, "brief", "orch", "--task", "billing service: which port does it use").exit_code == 0
    assert vm(cli, v, "search", "staging deploy time").exit_code == 0
    assert vm(cli, v, "search", "staging deploy time").exit_code == 0  # the same session: not a repeat
    s = out_json(vm(cli, v, "stats", "--json"))["recall"]
    assert s["questions"] == 2 and s["repeated_questions"] == 1 and s["repeated_rate"] == 0.5


def test_corrections_count_agent_notes_a_users_note_superseded(cli, en_vault):
    v = en_vault
    filed = remember(cli, v, "The backend port is 8080.", "--type", "fact", "--key", "backend.port", agent="orch")
    items = out_json(vm(cli, v, "review", "--json"))["items"]
    assert vm(cli, v, "review", "approve", items[0]["id"]).exit_code == 0, filed
    remember(cli, v, "Uses tabs.", "--type", "preference", "--name", "tabs", agent="orch")
    items = out_json(vm(cli, v, "review", "--json"))["items"]
    assert vm(cli, v, "review", "approve", items[0]["id"]).exit_code == 0
    # the user corrects the port
    done = remember(cli, v, "The backend port is 9090.", "--type", "fact", "--key", "backend.port")
    assert done["superseded"]
    c = out_json(vm(cli, v, "stats", "--json"))["corrections"]
    assert c == {"agent_notes": 2, "corrected_by_user": 1, "rate": 0.5}


def test_stats_names_a_broken_note_and_goes_on(cli, en_vault):
    v = en_vault
    remember(cli, v, "The billing service listens on port 8443.", "--type", "fact", "--name", "billing port")
    (v.root / "memories" / "broken.md").write_text("---\nname: [unclosed\n---\nbody\n", encoding="utf-8")
    r = vm(cli, v, "stats", "--json")
    assert r.exit_code == 0, r.output
    s = out_json(r)
    assert s["notes"]["active"] == 1
    assert [(x["path"], x["line"]) for x in s["skipped_files"]] == [("memories/broken.md", 3)]  # where YAML finds the list unclosed


def test_a_brief_follows_one_hop_of_links_within_its_scope_and_budget(cli, en_vault):
    v = en_vault
    remember(cli, v, "Tag the commit, wait for the green pipeline, then flip the feature toggle.",
             "--type", "procedure", "--name", "release checklist")
    remember(cli, v, "Old rollout notes.", "--type", "episode", "--name", "old rollout")
    assert vm(cli, v, "forget", "old-rollout").exit_code == 0
    assert vm(cli, v, "page", "ensure", "backend").exit_code == 0
    entry = out_json(vm(cli, v, "page", "add", "backend", "Rotate the signing keys quarterly.", "--json"))
    other = entry["entry"]["link"]  # an entry of another role's page
    remember(cli, v, f"The billing service listens on port 8443; deploy with [[memories/release-checklist]], "
                     f"see [[memories/old-rollout]] and {other}.", "--type", "fact", "--name", "billing port")
    git(v.root, "status")
    b = out_json(vm(cli, v, "brief", "frontend", "--task", "which port does the billing service use", "--json"))
    cited = {i["path"]: i for i in b["items"]}
    assert "memories/billing-port.md" in cited
    linked = cited["memories/release-checklist.md"]
    assert linked["via"] == "[[memories/billing-port]]" and "(linked from [[memories/billing-port]])" in b["markdown"]
    assert "agents/backend.md" not in cited and not any("old-rollout" in p for p in cited)
    # the backend role itself may follow the link to its own entry
    b = out_json(vm(cli, v, "brief", "backend", "--task", "which port does the billing service use", "--json"))
    assert any(i["path"] == "agents/backend.md" and i.get("via") for i in b["items"])
    # a budget with room for the direct hit only leaves the linked one out
    small = out_json(vm(cli, v, "brief", "frontend", "--task", "which port does the billing service use",
                        "--tokens", "150", "--json"))
    paths = [i["path"] for i in small["items"]]
    assert "memories/release-checklist.md" not in paths
