"""A typer-free path for the hottest call, ``hwadvisor check [--json] [--output F] [--timeout S]``.

Provisioning scripts run ``check --json`` on every node, often; building typer's command
tree costs more than the probe itself on a small machine. When the arguments are exactly
the simple form, :func:`try_fast_check` runs the same probe the typer command runs, and
prints the JSON (or the panels) from the facts dataclasses without importing pydantic
(see :mod:`hwadvisor.models.facts`); anything else (help, ``--bench``, a
malformed value) returns ``None`` and the full CLI handles it, with its usual messages.
"""

from __future__ import annotations

import math


def _parse(args: list[str]) -> tuple[bool, str | None, float] | None:
    """``(json, output, timeout)`` for the simple form, or None for anything else."""
    if not args or args[0] != "check":
        return None
    as_json, output, timeout = False, None, 10.0
    rest = args[1:]
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--json":
            as_json = True
        elif arg in ("--output", "-o", "--timeout") and i + 1 < len(rest):
            value = rest[i + 1]
            if value.startswith("-"):
                return None
            if arg == "--timeout":
                try:
                    timeout = float(value)
                except ValueError:
                    return None
                if not math.isfinite(timeout) or timeout <= 0:
                    return None
            else:
                output = value
            i += 1
        else:
            return None
        i += 1
    return as_json, output, timeout


def try_fast_check(args: list[str]) -> int | None:
    """Run the simple form of ``check`` without typer; None when the args need the full CLI.

    Returns 0; an error (an unwritable ``--output``) is raised to :func:`hwadvisor.cli.main`,
    whose boundary reports it as for every other command.
    """
    parsed = _parse(args)
    if parsed is None:
        return None
    as_json, output, timeout = parsed
    from hwadvisor.cli._common import emit
    from hwadvisor.models.plain import to_json_value
    from hwadvisor.probe import probe_machine

    facts = probe_machine(timeout=timeout)
    document = to_json_value(facts)
    assert isinstance(document, dict)

    def render(_doc: dict[str, object]) -> None:
        from hwadvisor.render.check import render_facts

        render_facts(facts)  # the dataclasses: no pydantic here either

    emit(document, as_json=as_json, output=output, render=render)
    return 0
