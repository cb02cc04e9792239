"""The scenarios of ``bench_recall.py``, one module per concern:

- :mod:`recall.common`: child processes, the index engine in use, notes picked reproducibly;
- :mod:`recall.build`: the full build in a new process, and one-file updates;
- :mod:`recall.peers`: SQLite FTS5 and a brute-force scan on the same documents;
- :mod:`recall.warm` and :mod:`recall.cold`: searches in a warm process, and new processes;
- :mod:`recall.watch`: a save until it is searchable, with a watcher running;
- :mod:`recall.profiles`: where a cold brief, an update and a build spend their time;
- :mod:`recall.sizes`: one size, each engine on its own copy of the vault;
- :mod:`recall.tables`, :mod:`recall.goals` and :mod:`recall.document`: the Markdown.

They import the shared harness (``timing``, ``report``, ``vaults``) from ``benchmarks/``,
which ``bench_recall.py`` puts on ``sys.path``.
"""
