"""The journal as the vault's ``vault.journal``: a session filed, a day's record made, old
days pruned, who may read it — each change in one commit through the vault's writer."""

from __future__ import annotations

import datetime as _dt

from .. import files
from ..errors import BadInput, NotFound, PermissionRefused
from ..models import Actor, Change
from ..names import check_name
from .days import day_path, days, plan_add, plan_consolidate, plan_prune
from .transcripts import MAX_TURN_CHARS, Transcript, read


def local_day() -> _dt.date:
    """The local day (as :func:`vaultmem.pages.today`)."""
    return _dt.datetime.now().astimezone().date()


class Journal:
    """The journal of a vault: read by humans and the orchestrator only."""

    def __init__(self, vault) -> None:
        self.vault = vault

    def may_read(self, agent: str | None) -> None:
        """The journal is read by humans (``agent`` None) and the orchestrator only."""
        if agent is not None and agent != self.vault.config.orchestrator:
            raise PermissionRefused(f"agent {agent!r} may not read the journal: it holds whole sessions, and only "
                                    f"the orchestrator ({self.vault.config.orchestrator}) and humans read it",
                                    hint="search memory without --journal; a brief for the orchestrator falls "
                                         "back to the journal by itself when memory has nothing")

    def add(self, transcript, actor: Actor, session: str | None = None, agent: str | None = None,
            day=None) -> Change:
        """File a session's transcript into the journal — a path (its shape found from its
        text) or a :class:`vaultmem.journal.Transcript` — in one commit: the turns not in
        the journal yet, each under its own day (``day``, default today, for a turn
        without a time), secrets replaced by placeholders (whatever ``safety.secrets``
        says: a transcript is kept, not refused). ``agent``: the runtime or agent whose
        session it was. Adding a session again changes nothing."""
        t = transcript if isinstance(transcript, Transcript) else read(transcript, session=session)
        if session:
            t.session = session
        if agent is not None:
            agent = check_name(agent, "agent name", field="agent")
        day = self.checked_day(day) if isinstance(day, str) else (day or local_day()).isoformat()
        scrub = self.vault.writer.scrubber()
        scrub.mode = "redact"
        scrub.max_bytes = 4 * MAX_TURN_CHARS + 4096
        with self.vault.writer.locked():
            filed = plan_add(self.vault.root, t, agent, day, self.vault.config.lang, lambda f, x: scrub.text(f, x))
            sha = None
            message = f"journal: session {t.session}: {filed.added} new turn{'' if filed.added == 1 else 's'}"
            if filed.added:
                # every text it adds went through the scrubber above: not scanned twice (5 MB of
                # turns cost minutes in the second scan)
                sha = self.vault.writer.apply(actor, f"{message} ({t.shape}, {t.source})", filed.writes,
                                              unscanned=tuple(filed.writes))
        details = {"session": t.session, "shape": t.shape, "turns": len(t.turns), "added": filed.added,
                   "known": filed.known, "days": filed.days}
        return Change("journal add", sorted(filed.writes), sha, message, details, warnings=t.skipped + scrub.warnings())

    def consolidate(self, actor: Actor, day=None) -> Change:
        """Make a day's record (:func:`vaultmem.journal.plan_consolidate`) at the top of its
        journal file, in one commit; made again each time (nothing changes when its turns
        did not). Humans and the orchestrator only."""
        self.may_read(None if actor.is_human else actor.name)
        day = self.checked_day(day) if isinstance(day, str) else (day or local_day()).isoformat()
        rel = day_path(day)
        with self.vault.writer.locked():
            if not (self.vault.root / rel).is_file():
                known = days(self.vault.root)
                raise NotFound(f"the journal has no day {day}",
                               hint=f"its days: {', '.join(known[-5:])}{' …' if len(known) > 5 else ''}" if known
                               else "the journal is empty: 'vaultmem journal add TRANSCRIPT' files a session")
            text = files.read_vault_text(self.vault.root, rel)
            new = plan_consolidate(text, day, self.vault.config.lang)
            sha = self.vault.writer.apply(actor, f"journal: the record of {day}", {rel: new}) if new != text else None
        return Change("journal consolidate", [rel], sha, f"journal: the record of {day}", {"day": day})

    def prune(self, actor: Actor, dry_run: bool = False, today=None) -> Change:
        """Remove the journal's day files older than ``journal.keep_days`` (0: none) in one
        commit — git history keeps them. Humans only; ``dry_run`` says what would go."""
        if not dry_run and not actor.is_human:
            raise PermissionRefused(f"agent {actor.name!r} may not prune the journal",
                                    hint="a human runs 'vaultmem journal prune' (see what it would do with --dry-run)")
        with self.vault.writer.locked():
            gone = plan_prune(self.vault.root, self.vault.config.journal_keep_days, today or local_day())
            message = f"journal: prune {len(gone)} day{'' if len(gone) == 1 else 's'} older than " \
                      f"{self.vault.config.journal_keep_days} days (journal.keep_days)"
            sha = self.vault.writer.apply(actor, message, dict.fromkeys(gone)) if gone and not dry_run else None
        return Change("journal prune", gone, sha, message,
                      {"dry_run": dry_run, "keep_days": self.vault.config.journal_keep_days})

    def days(self) -> list[str]:
        """The days the journal holds (``YYYY-MM-DD``), oldest first."""
        return days(self.vault.root)

    @staticmethod
    def checked_day(day: str) -> str:
        try:
            return _dt.date.fromisoformat(day).isoformat()
        except ValueError:
            raise BadInput(f"{day!r} is not a day (YYYY-MM-DD)", field="date") from None
