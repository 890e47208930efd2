"""`hwadvisor prices update` against a gpuhunt-format catalog served from 127.0.0.1."""

from __future__ import annotations

import json
import threading
import zipfile
from collections.abc import Callable, Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.catalog import load_devices
from hwadvisor.catalog.instances import load_instances
from hwadvisor.catalog.price_cache import cache_file, update

Cli = Callable[..., Any]
RECORDED = Path(__file__).parent / "data" / "gpuhunt"
VERSION = (RECORDED / "version").read_text().strip()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No request log on the test's stderr."""


def _serve(root: Path) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """The recorded catalog laid out as gpuhunt publishes it (``v2/version``,
    ``v2/<version>/catalog.zip``), served over HTTP on 127.0.0.1."""
    root = tmp_path / "site"
    build = root / "v2" / VERSION
    build.mkdir(parents=True)
    (root / "v2" / "version").write_text(VERSION + "\n")
    with zipfile.ZipFile(build / "catalog.zip", "w") as archive:
        for csv_file in sorted(RECORDED.glob("*.csv")):
            archive.write(csv_file, csv_file.name)
    server, url = _serve(root)
    try:
        yield root, url
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user cache of the test's own (the suite keeps the cache off)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(folder))
    return folder


def test_update_keeps_the_dated_catalog_and_later_runs_price_with_it(
    site: tuple[Path, str], cache: Path
) -> None:
    _, url = site
    done = update(f"{url}/v2", devices=load_devices())
    assert done.price_date == "2026-12-01" and done.version == VERSION
    assert done.path == str(cache / "prices" / "instances.csv")
    # One row per instance type: the cheapest region, the lowest spot price of them.
    by_type = {i.instance_type: i for i in done.instances}
    assert by_type["p5en.48xlarge"].spot_price == pytest.approx(26.5714)
    assert "2 regions" in by_type["gpu_1x_h100_sxm5"].note
    assert done.skipped == {"not in the device catalog (RadeonProV520)": 1}
    assert {"h100-sxm", "h100-pcie", "a100-80gb", "a10"} <= set(done.single_gpu_devices())
    # Every later load lays the kept catalog over the shipped snapshot.
    catalog = load_instances()
    kept = catalog.find("gpu_1x_h100_sxm5")
    assert kept.price == 4.29 and kept.price_date == "2026-12-01" and kept.cloud == "lambdalabs"
    assert VERSION in kept.source and catalog.find("p5en.48xlarge").price_date == "2026-12-01"
    assert str(cache_file()) in catalog.files
    assert catalog.find("g4dn.xlarge").price_date == "2022-04"  # not in the update: shipped


def test_the_cli_updates_and_the_estimate_rents_one_h100_not_eight(
    cli: Cli, site: tuple[Path, str], cache: Path
) -> None:
    _, url = site
    code, out, err = cli("prices", "update", "--url", f"{url}/v2", "--json")
    assert code == 0, err
    doc = json.loads(out)["prices"]
    assert doc["price_date"] == "2026-12-01" and doc["instances"] == 7
    code, out, err = cli(
        "estimate", "--model", "resnet50", "--on", "h100-sxm", "--no-bench", "--json"
    )
    assert code == 0, err
    cost = json.loads(out)["estimates"][0]["cost"]
    assert cost["instance"] == "gpu_1x_h100_sxm5" and cost["price_date"] == "2026-12-01"
    assert not any("whole instance" in n for n in cost["notes"])


def test_the_text_summary_names_the_date_and_the_file(
    cli: Cli, site: tuple[Path, str], cache: Path
) -> None:
    _, url = site
    code, out, _ = cli("prices", "update", "--url", f"{url}/v2")
    assert code == 0
    assert "priced 2026-12-01" in out and str(cache) in out and "h100-sxm" in out


def test_one_skypilot_csv_is_read_and_dated_by_its_last_modified(
    tmp_path: Path, cache: Path
) -> None:
    root = tmp_path / "sky" / "catalogs" / "v8" / "aws"
    root.mkdir(parents=True)
    (root / "vms.csv").write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,"
        "Region,AvailabilityZone\n"
        "p5en.48xlarge,H200,8,192,2048,,63.296,27.1988,us-east-1,us-east-1a\n"
    )
    server, url = _serve(tmp_path / "sky")
    try:
        done = update(f"{url}/catalogs/v8/aws/vms.csv", devices=load_devices())
    finally:
        server.shutdown()
        server.server_close()
    (inst,) = done.instances
    assert inst.cloud == "aws" and inst.device_id == "h200"
    assert done.price_date == done.instances[0].price_date  # the file's Last-Modified day


def test_offline_is_one_line_exit_3_and_the_kept_catalog_stays(
    cli: Cli, site: tuple[Path, str], cache: Path
) -> None:
    _, url = site
    assert cli("prices", "update", "--url", f"{url}/v2")[0] == 0
    kept = (cache / "prices" / "instances.csv").read_bytes()
    server, dead = _serve(cache)
    server.shutdown()
    server.server_close()  # the port now refuses connections
    code, out, err = cli("prices", "update", "--url", f"{dead}/v2", "--timeout", "2")
    assert code == 3 and out == ""
    assert len(err.strip().splitlines()) == 1 and "cannot reach" in err
    code, _, err = cli("prices", "update", "--url", f"{url}/v3")
    assert code == 3 and "HTTP 404" in err
    assert (cache / "prices" / "instances.csv").read_bytes() == kept
    assert not [p for p in (cache / "prices").iterdir() if p.name.startswith(".")]


def test_a_damaged_archive_is_bad_input(cli: Cli, site: tuple[Path, str], cache: Path) -> None:
    root, url = site
    (root / "v2" / VERSION / "catalog.zip").write_bytes(b"not a zip")
    code, _, err = cli("prices", "update", "--url", f"{url}/v2")
    assert code == 2 and "not a zip archive" in err


def test_with_the_cache_off_there_is_nowhere_to_keep_them(cli: Cli) -> None:
    code, _, err = cli("prices", "update", "--url", "http://127.0.0.1:9/v2")
    assert code == 2 and "cache is off" in err
