"""Run vaultmem commands in a vault on a full disk and report what they did (JSON on stdout).

Used by tests/test_kills.py, which runs it inside a private mount namespace
(``unshare -m``, or ``unshare -rm`` without root), so the small tmpfs it mounts is seen by
no other process and disappears with it. The test makes the assertions; this script
only sets the scene and observes.

Input (JSON on stdin)::

    {"mount": DIR, "size": "4m", "source": VAULT, "keys": [AGENT, ...], "vaultmem": EXE,
     "env": {...}, "commands": [[ARG, ...], ...], "after": [[ARG, ...], ...]}

It mounts a tmpfs of ``size`` on ``mount``, clones ``source`` there (a fresh clone: the
git-ignored per-machine folders do not exist yet), copies the private keys of ``keys``
from the source, hashes every file (but .git and .vaultmem/index), fills the disk, runs
each of ``commands`` (``vaultmem --vault CLONE ARGS``) and observes the vault after each;
then deletes the filler and runs ``after``. Output: ``{"commands": [...], "after":
[...], ...}``, or ``{"skip": REASON}`` when the tmpfs cannot be mounted.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

TEMP_MARK = ".vmtmp-"


def snapshot(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d != ".git"]
        if rel_dir == ".vaultmem":
            dirnames[:] = [d for d in dirnames if d != "index" and not d.startswith("index.")]
        for name in filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            try:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError as exc:
                out[rel] = f"unreadable: {exc}"
    return out


def look(root: Path, before: dict[str, str]) -> dict:
    temp, empty_ignores = [], []
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            rel = (Path(dirpath) / name).relative_to(root).as_posix()
            if TEMP_MARK in name:
                temp.append(rel)
            if name == ".gitignore" and (Path(dirpath) / name).stat().st_size == 0:
                empty_ignores.append(rel)
    now = snapshot(root)
    return {"temp_files": sorted(temp), "empty_gitignores": sorted(empty_ignores),
            "changed": sorted(k for k in before if now.get(k) != before[k]),
            "new": sorted(k for k in now if k not in before)}


def fill(folder: Path) -> int:
    """Write a filler file until the disk is full; returns its size."""
    fd = os.open(folder / "filler.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    size = 0
    try:
        for chunk in (1 << 20, 1 << 16, 1 << 12, 1 << 9, 1):
            data = b"\0" * chunk
            while True:
                try:
                    size += os.write(fd, data)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return size


def main() -> None:
    spec = json.load(sys.stdin)
    mount = Path(spec["mount"])
    mount.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={spec.get('size', '4m')}", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(json.dumps({"skip": f"cannot mount a tmpfs: {done.stderr.strip() or done.returncode}"}))
        return
    try:
        report = scenario(spec, mount)
    finally:
        if spec.get("unmount"):
            subprocess.run(["umount", "-l", str(mount)], capture_output=True)
    print(json.dumps(report))


def scenario(spec: dict, mount: Path) -> dict:
    env = spec["env"]
    source = Path(spec["source"])
    root = mount / "vault"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(source), str(root)], check=True, env=env)
    for agent in spec.get("keys", []):
        keys = root / ".vaultmem" / "keys"
        keys.mkdir(parents=True, exist_ok=True)
        os.chmod(keys, 0o700)
        for name in (f"{agent}.key", ".gitignore"):
            shutil.copy2(source / ".vaultmem" / "keys" / name, keys / name)

    def run(args):
        done = subprocess.run([spec["vaultmem"], "--vault", str(root), *args], capture_output=True, text=True,
                              env=env, cwd=root, timeout=120)
        return {"args": args, "rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr}

    before = snapshot(root)
    filled = fill(mount)
    st = os.statvfs(mount)
    report = {"filled": filled, "free_blocks": st.f_bavail, "commands": [], "after": []}
    for args in spec["commands"]:
        result = run(args)
        result.update(look(root, before))
        report["commands"].append(result)
    (mount / "filler.bin").unlink()
    for args in spec.get("after", []):
        result = run(args)
        result.update(look(root, before))
        report["after"].append(result)
    return report


if __name__ == "__main__":
    main()
