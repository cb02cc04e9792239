"""The background filer: ``python -m vaultmem.adapters.claude drain ROOT``."""

import sys

from .spool import drainer_main

if len(sys.argv) == 3 and sys.argv[1] == "drain":
    sys.exit(drainer_main(sys.argv[2]))
sys.exit(0)
