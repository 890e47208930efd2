"""Ansible local facts: an executable ``hwadvisor.fact`` that prints a cached report.

Ansible's ``setup`` module runs every executable ``*.fact`` in ``/etc/ansible/facts.d``
and parses its stdout as JSON, under ``ansible_local.<basename>``. It applies no timeout,
so the fact must never probe GPUs or run benchmarks: it is a tiny POSIX sh script that
prints a cache file (``hwadvisor check --json --output CACHE``, refreshed by a systemd
timer or cron, see docs/provisioning.md) and, when the cache is missing or unreadable,
prints a JSON object with an ``error`` key so that the play still gets a dict.
"""

from __future__ import annotations

import json
import shlex

from hwadvisor.errors import UsageError

DEFAULT_CACHE = "/var/cache/hwadvisor/facts.json"
FACT_NAME = "hwadvisor.fact"
#: The fact must be executable: Ansible reads a non-executable .fact file as JSON/INI.
FACT_MODE = 0o755

_TEMPLATE = """\
#!/bin/sh
# Ansible local fact written by hwadvisor (hwadvisor export --format ansible).
# It only prints a cache: probing here could hang a play (Ansible applies no timeout).
# Refresh the cache with: {refresh}
cache={cache}
if [ -r "$cache" ] && [ -s "$cache" ]; then
    exec cat -- "$cache"
fi
printf '%s\\n' {missing}
"""


def refresh_command(cache: str) -> str:
    """The command that refreshes the cache (what the systemd timer and cron line run)."""
    return f"hwadvisor check --json --bench --output {shlex.quote(cache)}"


def render_fact(cache: str = DEFAULT_CACHE) -> str:
    """The text of the ``hwadvisor.fact`` script reading ``cache`` (an absolute path)."""
    if not cache.startswith("/") or "\n" in cache or "\0" in cache:
        raise UsageError(f"--cache {cache!r} must be an absolute path on one line")
    missing = json.dumps(
        {
            "error": f"hwadvisor cache {cache} is missing or unreadable",
            "refresh": refresh_command(cache),
        },
        sort_keys=True,
    )
    return _TEMPLATE.format(
        refresh=refresh_command(cache).replace("\n", " "),
        cache=shlex.quote(cache),
        missing=shlex.quote(missing),
    )


def render_cache(report_json: str) -> str:
    """The cache text: the facts document as ``check --json`` writes it."""
    return report_json if report_json.endswith("\n") else report_json + "\n"
