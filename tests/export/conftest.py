"""Fixtures for the export tests: the saved reports and a strict label validator."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

from hwadvisor.export.report import Report, load_report

REPORTS = Path(__file__).parent.parent / "data" / "reports"
GOOD_REPORTS = sorted(
    p for p in REPORTS.glob("*.json") if not p.name.startswith(("bad-", "partial-"))
)
BAD_REPORTS = sorted(REPORTS.glob("bad-*.json"))
PARTIAL_REPORTS = sorted(REPORTS.glob("partial-*.json"))

# The Kubernetes rules, written out again here on purpose (not imported from the code
# under test): a qualified name part and a value are at most 63 characters, start and end
# with an alphanumeric, and hold only alphanumerics, '-', '_' and '.'; a prefix is a DNS
# subdomain of at most 253 characters made of RFC 1123 labels (lower case, at most 63).
_PART = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def k8s_name_ok(name: str) -> bool:
    """Strict check of a label name part."""
    return 0 < len(name) <= 63 and _PART.fullmatch(name) is not None


def k8s_value_ok(value: str) -> bool:
    """Strict check of a label value (may be empty)."""
    return value == "" or k8s_name_ok(value)


def k8s_prefix_ok(prefix: str) -> bool:
    """Strict check of a label prefix (DNS subdomain)."""
    return 0 < len(prefix) <= 253 and all(
        len(p) <= 63 and _DNS.fullmatch(p) for p in prefix.split(".")
    )


def parse_features(text: str) -> tuple[dict[str, str], datetime | None]:
    """Parse an NFD features.d file strictly; fail the test on any line that breaks the rules."""
    assert len(text.encode("utf-8")) <= 64 * 1024, "features file over 64 KiB"
    labels: dict[str, str] = {}
    expiry: datetime | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# +expiry-time="):
            raw = line.removeprefix("# +expiry-time=")
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)", raw), (
                f"line {n}: not RFC 3339: {raw}"
            )
            expiry = datetime.fromisoformat(raw.replace("Z", "+00:00"))
            continue
        if line.startswith("#") or not line.strip():
            continue
        key, sep, value = line.partition("=")
        assert sep, f"line {n}: no '=' in {line!r}"
        prefix, slash, name = key.partition("/")
        assert slash, f"line {n}: label without prefix: {key!r}"
        assert k8s_prefix_ok(prefix), f"line {n}: bad prefix {prefix!r}"
        assert k8s_name_ok(name), f"line {n}: bad name {name!r}"
        assert k8s_value_ok(value), f"line {n}: bad value {value!r}"
        assert key not in labels, f"line {n}: duplicate {key}"
        labels[key] = value
    return labels, expiry


@pytest.fixture(params=GOOD_REPORTS, ids=lambda p: p.stem)
def good_report(request: pytest.FixtureRequest) -> Report:
    """Each readable saved report in turn."""
    return load_report(request.param)


def report_named(stem: str) -> Report:
    """A saved report by file stem."""
    return load_report(REPORTS / f"{stem}.json")
