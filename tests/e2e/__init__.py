"""End-to-end tests: a real Claude Code against a stand-in Messages API (docs/e2e.md)."""
