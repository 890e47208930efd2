"""`hwadvisor prices update`: fetch a current, dated price catalog into the user cache."""

from __future__ import annotations

import typer

from hwadvisor.cli._app import app
from hwadvisor.cli._common import print_json

prices_app = typer.Typer(
    name="prices",
    help="Refresh the cloud prices the estimates use.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(prices_app, name="prices")


@prices_app.command("update")
def update(
    url: str | None = typer.Option(
        None,
        "--url",
        envvar="HWADVISOR_PRICES_URL",
        help="gpuhunt catalog base (default: gpuhunt's published catalog), or one SkyPilot "
        "or gpuhunt CSV (a URL ending in .csv).",
    ),
    timeout: float = typer.Option(
        20.0, "--timeout", min=0.1, help="Seconds to wait for each request."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print what was kept as JSON."),
) -> None:
    """Fetch a current price catalog and keep it, dated, in the user cache; later runs of
    recommend, estimate and catalog instances price with it."""
    from hwadvisor.catalog import load_devices
    from hwadvisor.catalog.price_cache import cache_file
    from hwadvisor.catalog.price_cache import update as run_update
    from hwadvisor.errors import UsageError

    if cache_file() is None:
        raise UsageError(
            "the cache is off (HWADVISOR_CACHE_DIR=off): nowhere to keep the prices; "
            "pass a fetched file with --prices FILE instead"
        )
    done = run_update(url, devices=load_devices(), timeout_s=timeout)
    if json_out:
        print_json({"prices": done.summary()})
        return
    clouds = ", ".join(f"{c} {n}" for c, n in sorted(done.providers.items()))
    single = ", ".join(done.single_gpu_devices()) or "none"
    typer.echo(
        f"kept {len(done.instances)} offers priced {done.price_date} ({clouds}) in {done.path}\n"
        f"from {done.url}\n"
        f"single-GPU offers of: {single}"
    )
    if done.skipped:
        left = sum(done.skipped.values())
        typer.echo(f"{left} rows name hardware outside the device catalog and were left out")
