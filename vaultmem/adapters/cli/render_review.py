"""The review inbox as text: an item in full, the groups a decision covers, the inbox, and
what approving, editing or rejecting did (``vaultmem review …``). Re-exported by
:mod:`.render`, where every command finds its renderer."""

from __future__ import annotations

from ..edge import plain_name


# -- the review inbox ---------------------------------------------------------------------------


def inbox_item(item: dict) -> str:
    """One inbox item in full (``review show``, and each step of ``review -i``)."""
    lines = [f"{item['id']}  {item['op']}  {item['status']}  proposed by {item['proposed_by']} at {item['proposed']}"
             + (f" (session {item['session']})" if item.get("session") else "")]
    if item["quarantined"]:
        lines.append("  QUARANTINED: third-party content; only a human can promote it")
    if item["flags"]:
        lines.append(f"  FLAGGED as instruction-like: {'; '.join(item['flags'])}")
    if item.get("changed_after_filing"):
        filed = f"; what was filed: git show {item['filed_in'][:12]}:{item['path']}" if item.get("filed_in") else ""
        then = "only a human can decide it, as it is now" if item["status"] == "pending" else "decided as it was then"
        lines.append(f"  CHANGED after it was filed ({item['changed_after_filing']}): {then}{filed}")
        if item.get("changed_since_filed"):  # the provenance above is what was filed
            now = item.get("as_changed") or {}
            lines.append("  changed since filed (provenance shown as filed): "
                         + "; ".join(f"{k} now {plain_name(now[k])}" if k in now else k
                                     for k in item["changed_since_filed"]))
    note = item.get("note")
    if note:
        lines.append(f"  {note.get('type')}: {note.get('name')} — {note.get('description')}")
        lines.append(f"  said by {note.get('author')} ({note.get('author_kind')}), source {note.get('source')}"
                     + (f", when {note['said']}" if note.get("said") else ""))
        extras = [f"{k} {note[k]}" for k in ("scope", "agent", "project", "key", "importance") if note.get(k)]
        if note.get("aliases"):
            extras.append(f"aliases {', '.join(note['aliases'])}")
        if extras:
            lines.append("  " + "; ".join(extras))
    for k in ("target", "role", "section", "project", "delegation"):
        if item.get(k) and not (k == "project" and note):
            lines.append(f"  {k}: {item[k]}")
    if item.get("reviewed_by"):
        lines.append(f"  {item['status']} by {item['reviewed_by']} at {item.get('reviewed')}"
                     + (f": {item['reason']}" if item.get("reason") else "")
                     + (f" → {item['result']}" if item.get("result") else ""))
    lines.append("")
    lines.extend("  | " + line for line in (item["text"] or "(no text)").splitlines())
    return "\n".join(lines)


def _kind(item: dict) -> str:
    """An item's kind, as the review groups it: the operation, and a note's type."""
    note = item.get("note") if isinstance(item.get("note"), dict) else {}
    return f"{item['op']} {note['type']}" if item["op"] in ("add", "replace") and note.get("type") else item["op"]


def inbox_groups(items: list[dict]) -> list[dict]:
    """The items by the session that filed them and their kind: ``{"session", "kind",
    "count", "ids"}`` each, by session then kind (items filed in no session last)."""
    found: dict[tuple, list[str]] = {}
    for i in items:
        found.setdefault((i.get("session"), _kind(i)), []).append(i["id"])
    return [{"session": session, "kind": kind, "count": len(ids), "ids": ids}
            for (session, kind), ids in sorted(found.items(), key=lambda x: (x[0][0] is None, str(x[0][0] or ""), x[0][1]))]


def inbox(items: list[dict], *, status: str = "pending") -> str:
    """``review`` / ``review list``: the items by session and kind, one line an item (a
    fact seen in several sessions says how often)."""
    if not items:
        return "the inbox is empty" if status == "pending" else f"no {status} items"
    by_id = {i["id"]: i for i in items}
    out = []
    for group in inbox_groups(items):
        out.append(f"— session {plain_name(group['session'])} · {group['kind']} ({group['count']})"
                   if group["session"] is not None else f"— no session · {group['kind']} ({group['count']})")
        for iid in group["ids"]:
            i = by_id[iid]
            marks = (" [quarantined]" if i["quarantined"] else "") + (" [flagged]" if i["flags"] else "")
            if i.get("changed_after_filing"):  # what is shown is what vaultmem filed; say what differs now
                fields = i.get("changed_since_filed")
                marks += (" [CHANGED since filed: not filed by vaultmem]" if fields is None
                          else f" [CHANGED since filed: {', '.join(fields)}]" if fields else " [CHANGED since filed]")
            seen = f" seen {i['seen']}× ({len(i.get('sessions') or [])} sessions)" if str(i.get("seen", 1)) != "1" else ""
            summary = i["summary"].removeprefix(f"{i['op']} ") if i["op"] == "remove" else i["summary"]
            out.append(f"{i['id']}  {i['op']:<8} {summary[:70]}  (from {i['proposed_by']}){seen}{marks}")
    if status == "pending":
        out.append("decide one: vaultmem review approve ID / reject ID --reason …; a group (a human): "
                   "vaultmem review approve --session S / reject --flagged --reason …")
    return "\n".join(out)


def group_decided(change) -> str:
    """A group approved or rejected in one commit: each item, and the commit."""
    d = change.details
    verb = "approved" if change.action == "review.approve" else "rejected"
    lines = [f"{verb} {len(d['decided'])} item{'' if len(d['decided']) == 1 else 's'} ({d['group']}) "
             f"in commit {change.commit[:8]}:"]
    lines += [f"  {x['id']}" + (f" → {x['result']}" if x.get("result") else "") for x in d["decided"]]
    return "\n".join(lines)


def approved(change) -> str:
    d = change.details
    return f"approved {d['id']} → {d['result']} (commit {change.commit[:8]})"


def edited(change, *, item_id: str) -> str:
    return f"edited {item_id} (commit {change.commit[:8]})"


def rejected(change, *, item_id: str) -> str:
    return f"rejected {item_id} (commit {change.commit[:8]})"
