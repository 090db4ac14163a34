"""`python -m rocketq` runs the command line."""

from rocketq.cli import main

raise SystemExit(main())
