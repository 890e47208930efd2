"""`hwadvisor catalog devices|models|instances`: the reference data, with sources."""

from __future__ import annotations

from pathlib import Path

import typer

from hwadvisor.cli._app import app
from hwadvisor.errors import UsageError

KINDS = ("devices", "models", "instances")


@app.command()
def catalog(
    kind: str = typer.Argument(..., help="devices, models or instances."),
    json_out: bool = typer.Option(False, "--json", help="Print the entries as JSON on stdout."),
    extra: list[Path] | None = typer.Option(
        None, "--catalog", help="Extra catalog YAML file (merged by id)."
    ),
    prices: Path | None = typer.Option(
        None, "--prices", help="instances: a SkyPilot or gpuhunt price CSV over the shipped one."
    ),
) -> None:
    """List the device or model catalog (peaks, memory, FLOPs) with each entry's source."""
    from hwadvisor.catalog import load_devices, load_models

    if kind not in KINDS:
        from hwadvisor.catalog import did_you_mean

        raise UsageError(
            f"catalog kind must be devices, models or instances, got {kind!r}{did_you_mean(kind, KINDS)}"
        )
    if kind == "instances":
        _instances(prices, extra, as_json=json_out)
        return
    entries = load_devices(extra) if kind == "devices" else load_models(extra)
    if json_out:
        from hwadvisor.cli._common import print_json

        print_json({kind: [e.model_dump(mode="json") for e in entries.values()]})
        return
    from hwadvisor.render.estimate import render_devices, render_models

    if kind == "devices":
        render_devices(load_devices(extra))
    else:
        render_models(load_models(extra))


def _instances(prices: Path | None, extra: list[Path] | None, *, as_json: bool) -> None:
    """``catalog instances``: the table (or JSON), and a warning for stale prices."""
    import sys

    from hwadvisor.catalog import load_devices
    from hwadvisor.catalog.instances import load_instances, stale_summary

    catalog = load_instances(prices, devices=load_devices(extra))
    warning = stale_summary(catalog.instances)
    if warning:
        sys.stderr.write(f"hwadvisor: warning: {warning}\n")
    if as_json:
        from hwadvisor.cli._common import print_json

        print_json(
            {
                "instances": [i.row() for i in catalog.instances],
                "skipped": dict(catalog.skipped),
                "files": list(catalog.files),
            }
        )
        return
    from hwadvisor.render.cost import render_instances

    render_instances(catalog)
