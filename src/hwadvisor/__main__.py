"""`python -m hwadvisor` runs the command-line interface, exiting with its code."""

from __future__ import annotations

from hwadvisor.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
