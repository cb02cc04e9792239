"""What every engine indexes for a document: the same fields, the same terms.

Text fields hold the terms :mod:`vaultmem.analysis` produced, joined by spaces; the
engines only split them again, so what matches never depends on the engine.
"""

from __future__ import annotations

import json
from dataclasses import asdict

from ..analysis import cjk_chars, tokens
from ..models import IndexDoc

NONE = "#none"  # the agent field of docs that belong to no agent ('#' is never in a name)
FIELDS = (("title", 2.0), ("body", 1.0), ("aliases", 1.5), ("near", 0.5))


def fields_of(doc: IndexDoc) -> dict:
    return {
        "id": doc.id,
        "path": doc.path,
        "kind": doc.kind,
        "agent": doc.agent or NONE,
        "type": doc.type or NONE,
        "status": doc.status or "active",
        "doc": json.dumps(asdict(doc), ensure_ascii=False),
        "title": " ".join(tokens(doc.title)),
        "body": " ".join(tokens(doc.text)),
        "aliases": " ".join(tokens(" ".join(doc.aliases))),
        "near": " ".join(tokens(doc.near)),
        "chars": " ".join(dict.fromkeys(cjk_chars(f"{doc.title} {doc.text} {' '.join(doc.aliases)}"))),
    }
