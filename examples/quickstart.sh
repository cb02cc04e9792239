#!/usr/bin/env bash
# A first tour of vaultmem on an example vault: create it, dispatch a role (its page is
# created on first use), record what the role learned, remember a fact, show the page,
# search, print the budgeted brief for the role's next session, and the git history
# that answers "who taught the agent this, and when".
# Usage: bash examples/quickstart.sh [VAULT_DIR]   (default: a new temp folder)
set -euo pipefail

VAULT="${1:-$(mktemp -d)/team-memory}"
export VAULTMEM_VAULT="$VAULT"

vaultmem init "$VAULT" --lang zh --orchestrator lee
# The orchestrator dispatches 前端审查 for the first time: its page is created now.
vaultmem page ensure 前端审查 --category 前端开发 --project dashboard --as lee
vaultmem page add 前端审查 "发现Dashboard组件存在useEffect清理函数缺失问题，后续审查需重点关注" --as lee
vaultmem page add 前端审查 "技术栈：React 18 + TypeScript + Vite" --section context --as lee
vaultmem remember "后端端口固定8080" --type fact --alias "backend port" --key backend.port --as lee
vaultmem remember "The user prefers function components and CSS Modules" --type preference --tag frontend

echo; echo "== vaultmem page show 前端审查"
vaultmem page show 前端审查
echo; echo "== vaultmem search 端口   (a 2-character word inside a sentence; the index builds itself)"
vaultmem search 端口
echo; echo "== vaultmem dispatch 前端审查 --task … --tokens 400   (the brief handed to the role's new session)"
vaultmem dispatch 前端审查 --task "审查 Dashboard 组件的 useEffect 和渲染性能" --tokens 400 --as lee
echo; echo "== MEMORY.md"
cat "$VAULT/MEMORY.md"
echo; echo "== git log (every change is a commit by the acting agent)"
git -C "$VAULT" log --format='%h %an: %s'
echo; echo "Vault: $VAULT"
