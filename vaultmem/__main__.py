"""The ``vaultmem`` command (``python -m vaultmem`` and the installed script).

For the short commands that answer from the index (``search``, ``brief``, ``dispatch``),
before anything else is imported: the freshness check's file walk starts in a child
process (:func:`vaultmem.walk.start_ahead`, handed to the CLI as ``ahead``), so that it
overlaps the ~0.1 s the CLI takes to import and parse its options; and the cyclic garbage collector runs rarely — such a
command allocates a few hundred thousand objects, lives well under a second and frees
everything when it exits, so the collector's frequent passes (~15 ms) and its final
collection at exit (~20 ms) buy nothing. It still runs, rarely, should the command turn
into long work (a refresh that re-indexes thousands of changed files). An agent
runtime's hook (``vaultmem hook …``) is as short, and runs with the same collector
setting (cold ``SubagentStart`` at 10,000 notes: ×0.93 CPU). Every other command runs as
it always did.
"""

import sys

# Young objects a collection waits for (Python's default: 700). A brief allocates a few
# hundred thousand; a re-index of thousands of files still collects every so often.
QUICK_GC_THRESHOLD = 200_000


def main() -> None:
    from .walk import AHEAD_COMMANDS, command_word, start_ahead

    word = command_word(sys.argv[1:])
    if word == "hook":  # an agent runtime's hook: no CLI toolkit, it answers within its budget
        import gc

        from .adapters.claude import cli_main

        gc.set_threshold(QUICK_GC_THRESHOLD)  # as the short commands below: a hook lives well under a second
        code = cli_main(sys.argv[1:])
        if code is not None:
            gc.freeze()
            sys.exit(code)
    if word == "mcp":  # the handshake is answered at once, while the server loads (adapters/mcp_front.py)
        from .adapters.mcp_front import start

        start()
    if word not in AHEAD_COMMANDS:
        _cli()
        return
    import gc

    gc.set_threshold(QUICK_GC_THRESHOLD)
    ahead = start_ahead(sys.argv[1:])
    try:
        _cli(ahead)
    finally:
        gc.freeze()  # what is left dies with the process: no collection on the way out


def _cli(ahead=None) -> None:
    from .adapters.cli import main as cli_main

    cli_main(ahead=ahead)


if __name__ == "__main__":
    main()
