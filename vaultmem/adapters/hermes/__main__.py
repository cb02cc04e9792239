"""``python -m vaultmem.adapters.hermes install [HERMES_HOME]``: the plugin folder Hermes 0.19 loads."""

from .install import main

raise SystemExit(main())
