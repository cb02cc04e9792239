"""The agents' signing keys: Ed25519, the public ones committed under ``keys/``, the private
ones per machine, and a signature checked."""

from __future__ import annotations

import base64
import datetime as _dt
import os
from pathlib import Path

from .. import files, layout
from ..errors import NotFound, VaultmemError
from ..parse.logline import LogEntry


KEYS_DIR = layout.KEYS_DIR
PRIVATE_DIR = layout.PRIVATE_KEYS_DIR


# -- keys ----------------------------------------------------------------------------------


def key_id(public_raw: bytes) -> str:
    import hashlib

    return hashlib.sha256(public_raw).hexdigest()[:16]


def public_raw(private) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def private_raw(private) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    return private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())


def new_private_key():
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.generate()


def save_private_key(root: Path, agent: str, private) -> Path:
    """Write ``agent``'s private key (mode 0600) into the git-ignored keys folder. A
    failed write (say, a full disk) leaves no key and no temp file behind."""
    path = files.inside(root, layout.private_key_path(agent))
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    files.ensure_gitignore(path.parent, "# private signing keys: never committed\n*\n")
    files.atomic_write(path, base64.b64encode(private_raw(private)) + b"\n", mode=0o600)
    return path


def load_private_key(root: Path, agent: str):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    path = root / PRIVATE_DIR / f"{agent}.key"
    try:
        raw = base64.b64decode(files.read_bytes(root, f"{PRIVATE_DIR}/{agent}.key").strip())
        return Ed25519PrivateKey.from_private_bytes(raw)
    except FileNotFoundError:
        raise NotFound(f"agent {agent!r} has no private key on this machine ({PRIVATE_DIR}/{agent}.key)",
                       hint=f"create one with: vaultmem keys new {agent}") from None
    except ValueError:
        raise VaultmemError(f"the private key {PRIVATE_DIR}/{agent}.key is damaged", path=str(path)) from None


def public_key_line(private) -> str:
    raw = public_raw(private)
    created = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"ed25519 {base64.b64encode(raw).decode()} {key_id(raw)} {created}"


def initial_keys(root: Path) -> dict[str, tuple[str, bytes]]:
    """Each agent's first public key, from ``shared/keys/<agent>.pub``: agent → (kid, raw)."""
    out = {}
    folder = root / KEYS_DIR
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.pub")):
        if not files.may_read(root, f"{KEYS_DIR}/{path.name}"):
            continue  # a link leading out of the vault is no key of this team
        try:
            first = path.read_text(encoding="utf-8").split("\n", 1)[0].split()
            raw = base64.b64decode(first[1])
        except (OSError, IndexError, ValueError):
            continue
        out[path.stem] = (key_id(raw), raw)
    return out


def verify_signature(public_raw: bytes, entry: LogEntry) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public_raw).verify(base64.b64decode(entry.sig, validate=True),
                                                              entry.payload())
        return True
    except (InvalidSignature, ValueError):
        return False
