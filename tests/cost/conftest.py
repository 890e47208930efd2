"""Fixtures for the cost tests: price files written by the tests, a fixed 'today'."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

#: The day the tests price on, so that "more than a year old" never drifts.
TODAY = date(2026, 12, 1)

SKYPILOT_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone"


def write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    """A price file of ``lines`` under ``tmp_path``."""
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def skypilot_file(tmp_path: Path) -> Path:
    """A small SkyPilot-format AWS catalog: a T4, an L4, a CPU type, and a GPU we lack."""
    return write(
        tmp_path,
        "aws-vms.csv",
        [
            SKYPILOT_HEADER,
            "g4dn.xlarge,T4,1,4,16,,0.60,0.20,us-east-1,us-east-1a",
            "g4dn.xlarge,T4,1,4,16,,0.58,0.19,us-west-2,us-west-2a",
            "g6.xlarge,L4,1,4,16,,0.90,0.30,us-east-1,us-east-1a",
            "c7i.large,,,2,4,,0.10,0.04,us-east-1,us-east-1a",
            "p2.xlarge,K80,1,4,61,,0.90,0.27,us-east-1,us-east-1a",
            "p2.8xlarge,K80,8,32,488,,7.20,2.16,us-east-1,us-east-1a",
        ],
    )
