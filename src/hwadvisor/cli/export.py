"""`hwadvisor export`: facts for Ansible, Kubernetes NFD labels, Prometheus metrics."""

from __future__ import annotations

import json
import math
import os
import sys

import typer

from hwadvisor.cli._app import app
from hwadvisor.errors import UsageError
from hwadvisor.export import ExportFormat
from hwadvisor.export.ansible import DEFAULT_CACHE
from hwadvisor.export.labels import DEFAULT_PREFIX
from hwadvisor.export.nfd import DEFAULT_EXPIRY_HOURS, MAX_EXPIRY_HOURS


def _summary(fmt: ExportFormat, output: str | None, text: str, cache: str | None) -> str:
    from hwadvisor.cli._common import stamped

    doc: dict[str, object] = {
        "format": fmt.value,
        "output": output,
        "bytes": len(text.encode("utf-8")),
        "cache_written": cache,
    }
    if output is None:
        doc["content"] = text
    return json.dumps(stamped(doc), indent=2) + "\n"


@app.command()
def export(
    fmt: ExportFormat = typer.Option(
        ...,
        "--format",
        "-f",
        help="ansible (facts.d script), nfd (features.d labels) or prometheus (textfile metrics).",
    ),
    from_file: str | None = typer.Option(
        None,
        "--from",
        help="A saved report (`hwadvisor check --json`, optionally with --bench); default: probe this machine now.",
    ),
    output: str | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Write to FILE atomically (dot-file, then rename) instead of stdout.",
    ),
    prefix: str = typer.Option(
        DEFAULT_PREFIX,
        "--prefix",
        help="nfd: label namespace (never nvidia.com or *kubernetes.io).",
    ),
    expiry: float = typer.Option(
        DEFAULT_EXPIRY_HOURS, "--expiry", help="nfd: hours until NFD drops the labels (0: never)."
    ),
    cache: str = typer.Option(
        DEFAULT_CACHE, "--cache", help="ansible: the cached report the fact prints."
    ),
    seed_cache: bool = typer.Option(
        False,
        "--seed-cache",
        help="ansible: also write the report (--from, or a probe) to --cache now.",
    ),
    timeout: float = typer.Option(
        10.0, "--timeout", help="Deadline in seconds for driver queries when probing."
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print a JSON summary (with the content when there is no --output)."
    ),
) -> None:
    """Export facts for provisioning engines: Ansible, Kubernetes NFD, Prometheus."""
    from hwadvisor.export.report import Report, load_report, probe_report
    from hwadvisor.io import atomic_write_text

    if not math.isfinite(expiry) or not 0 <= expiry <= MAX_EXPIRY_HOURS:
        raise UsageError(f"--expiry must be between 0 and {MAX_EXPIRY_HOURS} hours, not {expiry}")
    if not math.isfinite(timeout) or timeout <= 0:
        raise UsageError(f"--timeout must be a positive number of seconds, not {timeout}")

    def report() -> Report:
        return load_report(from_file) if from_file else probe_report(timeout=timeout)

    # Readable by all: node_exporter's textfile collector usually runs as another user.
    mode: int = 0o644
    cache_written: str | None = None
    if fmt is ExportFormat.ANSIBLE:
        from hwadvisor.export.ansible import FACT_MODE, render_fact

        text = render_fact(cache)
        mode = FACT_MODE
        if from_file and not seed_cache:
            # The fact prints the cache, not the report: say so rather than ignore --from.
            sys.stderr.write(
                "hwadvisor: note: --from is used with --format ansible only to --seed-cache\n"
            )
        if seed_cache:
            # Readable by all, so a play that gathers facts without become can read it.
            atomic_write_text(cache, report().facts.model_dump_json(indent=2) + "\n", mode=0o644)
            cache_written = cache
    elif fmt is ExportFormat.NFD:
        from hwadvisor.export.labels import check_prefix
        from hwadvisor.export.nfd import render_features

        check_prefix(prefix)  # refuse a bad prefix before probing
        text = render_features(report(), prefix=prefix, expiry_hours=expiry or None)
    else:
        from hwadvisor.export.prometheus import render_metrics, require_prometheus

        require_prometheus()  # say what is missing before probing
        text = render_metrics(report())
    if output:
        atomic_write_text(output, text, mode=mode)
        if fmt is ExportFormat.ANSIBLE and not os.access(output, os.X_OK):
            # An existing file keeps its mode (io.atomic_write_text): never made a script
            # behind the user's back, but Ansible runs a fact only when it is executable.
            sys.stderr.write(
                f"hwadvisor: note: {output} kept its mode, which is not executable; Ansible "
                f"reads it as data until you run chmod +x {output}\n"
            )
    if json_out:
        sys.stdout.write(_summary(fmt, output, text, cache_written))
    elif not output:
        sys.stdout.write(text)
    sys.stdout.flush()
