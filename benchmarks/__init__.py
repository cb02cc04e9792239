"""vaultmem's benchmarks. ``python -m benchmarks`` lists them; ``python -m benchmarks NAME
[ARGS]`` runs one (``NAME --help`` says what it measures and how).

Each is a scenario over three shared helpers: :mod:`vaults` (the one synthetic vault and
the queries asked of it), :mod:`timing` (medians, whole commands timed A/B in turn) and
:mod:`report` (JSON, Markdown tables, a generated section of a document). Results land in
``benchmarks/results/`` and ``docs/benchmarks.md``.
"""
