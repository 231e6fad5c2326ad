"""`python -m kbpo_client` runs the `kbpo` command."""

from kbpo_client.cli import main

raise SystemExit(main())
