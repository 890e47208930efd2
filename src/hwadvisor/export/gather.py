"""Reading a fleet's reports and estimating the workload on each machine.

This is the orchestration behind ``hwadvisor fleet``: plain functions the CLI calls, so
tests drive them directly. A report that cannot be read, or a machine the estimator
cannot price, becomes a :class:`~hwadvisor.models.fleet.FleetSkip` with the reason;
nothing in one report stops the others from being ranked.

Inputs: report files (``check --json`` documents), folders (read recursively: every
``*.json`` file and every line of every ``*.jsonl`` file; dot-files and dot-folders are
left out), and ``-`` for JSON Lines on stdin (one report per line). A folder with no
report in it is a skip naming the folder, so a fleet of nothing is bad input.

Every report is validated (a value out of its limit, :mod:`hwadvisor.models.bounds`, or a
string that is not valid Unicode skips that report, with the reason). Identical
hardware is estimated once: reports whose documents are the same apart from the host
name and the momentary state (:data:`MOMENTARY`: ``generated_at``, the probes' elapsed
times, free memory, GPU temperature and utilisation, when a bench ran and the load
around it) share one *hardware key*, and the estimate, the rule engine's verdict and the
price are computed once per key; the parts a report shares with the first of its key
are held once. Measured benchmark figures differ from machine to machine, and the
estimate rests on them, so machines whose figures differ are keys of their own.

"here" in the estimator prices a machine's CPU; a GPU machine is priced on its GPU's
catalog entry (matched by name and memory, see :func:`hwadvisor.catalog.match.match_gpu`),
with all of its GPUs of that type for the ``distributed`` scenario and one otherwise.
CPU-class scenarios (``prototyping``, ``edge``, ``preprocessing``) are priced on the CPU
everywhere. Each machine also gets the rule engine's verdict (``hwadvisor.pipeline.advise``,
as ``recommend --facts`` would give), which orders machines of equal status, and a cost
(:func:`hwadvisor.cost.fleet.machine_cost`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from pydantic import ValidationError

from hwadvisor.catalog.match import match_gpu
from hwadvisor.errors import FactsError, HwadvisorError
from hwadvisor.export.fleet import Candidate, rank_fleet
from hwadvisor.export.report import Report, report_from_data
from hwadvisor.io import read_limited_text
from hwadvisor.models import bounds
from hwadvisor.models.fleet import FleetReport, FleetSkip, RankBy
from hwadvisor.models.plain import printable
from hwadvisor.models.workload import Scenario, Workload

#: The most bytes one ``.jsonl`` file of reports may hold (100,000 reports of ~10 KB).
MAX_JSONL_BYTES = 1024 * 1024 * 1024

if TYPE_CHECKING:
    from hwadvisor.catalog.instances import InstanceCatalog
    from hwadvisor.catalog.schema import DeviceEntry
    from hwadvisor.cost.model import OwnHardware
    from hwadvisor.engine import RuleSet
    from hwadvisor.models.bench import BenchReport
    from hwadvisor.models.facts import Facts, Part

#: Scenarios whose work belongs on a CPU (GUIDANCE S1, S7, S8): ranked on CPU estimates.
CPU_SCENARIOS = frozenset({"prototyping", "edge", "preprocessing"})
#: The argument that means JSON Lines on stdin.
STDIN = "-"
REPORT_SUFFIXES = (".json", ".jsonl")


class ReadReports(NamedTuple):
    """The reports read (with their hardware keys, in the same order) and those skipped."""

    reports: list[Report]
    skipped: list[FleetSkip]
    keys: list[str]


# -- reading -------------------------------------------------------------------------------


#: What changes from moment to moment on one machine, left out of its hardware key: the
#: probes' elapsed times, free memory, and each GPU's free memory, temperature and
#: utilisation; in a bench report, when it ran, for how long and the load around it.
MOMENTARY: dict[str, frozenset[str]] = {
    "": frozenset({"generated_at"}),
    "host": frozenset({"hostname"}),
    "memory": frozenset({"available_bytes"}),
    "gpus": frozenset({"memory_free_bytes", "temperature_c", "utilization_percent"}),
    "probes": frozenset({"elapsed_ms"}),
    "bench": frozenset(
        {"generated_at", "elapsed_s", "load_avg_1m", "load_avg_1m_end", "torch_import_s"}
    ),
}


def _without(value: object, drop: frozenset[str]) -> object:
    """``value`` (a section, or a list of them) without the keys in ``drop``."""
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_without(v, drop) if isinstance(v, dict) else v for v in value]
    return value


def hardware_key(data: dict[str, Any]) -> str:
    """The document as canonical text without what differs between identical machines:
    the host name and the momentary state (:data:`MOMENTARY`). Machines that share it
    are one hardware group: one estimate, verdict and price for all of them."""
    rest = {k: v for k, v in data.items() if k not in MOMENTARY[""]}
    for section, drop in MOMENTARY.items():
        if section and section in rest:
            rest[section] = _without(rest[section], drop)
    return json.dumps(rest, separators=(",", ":"), default=str)


class _Reader:
    """Validates the first report of each hardware key; a later report of the key differs
    from it only in its name and momentary state, so only those are checked (as
    validation would check them) and its other parts are the first's own objects: 10,000
    reports of a few kinds of machine hold a few copies of them. A later report keeps
    its own host name, dates, free memory and GPU state; its probe records are the
    first's (their elapsed times checked, not kept)."""

    def __init__(self) -> None:
        self.seen: dict[str, Report] = {}

    def report(self, data: dict[str, Any], where: str) -> tuple[Report, str]:
        key = hardware_key(data)
        first = self.seen.get(key)
        if first is None:
            report = self.seen[key] = report_from_data(data, where=where)
            return report, key
        try:
            facts = _momentary(first.facts, data)
        except _Bad as exc:
            raise FactsError(
                f"invalid facts report: field {exc.loc}: {exc.why}", where=where
            ) from None
        return Report(facts=facts, verdicts=first.verdicts, source=where), key


class _Bad(Exception):
    """A momentary value that validation would refuse: where, and why."""

    def __init__(self, loc: str, why: str) -> None:
        super().__init__(f"{loc}: {why}")
        self.loc, self.why = loc, why


_MS = bounds.MILLISECONDS


def _field(cls: type[Part], section: Any, name: str, loc: str) -> Any:
    """Field ``name`` of ``section`` (a dict of the document) as validating ``cls`` would
    take it (absent: None), or :class:`_Bad`."""
    from hwadvisor.models.facts import checked_field

    value = section.get(name) if isinstance(section, dict) else None
    if isinstance(value, str) and bounds.text_problem(value) is not None:
        raise _Bad(loc, "not valid Unicode (a lone surrogate)")
    try:
        return checked_field(cls, name, value)
    except ValueError as exc:
        raise _Bad(loc, str(exc)) from None


def _momentary(facts: Facts, data: dict[str, Any]) -> Facts:
    """``facts`` (the first report of a hardware key) with the name and momentary state of
    ``data``, a report of the same key: the rest of ``data`` equals the first's document."""
    from hwadvisor.models.facts import Facts, Gpu, Host, Memory, ProbeRecord

    name = _field(Host, data.get("host"), "hostname", "host.hostname")
    changes: dict[str, Any] = {}
    if "generated_at" in data:
        changes["generated_at"] = _field(Facts, data, "generated_at", "generated_at")
    if name != facts.host.hostname:
        changes["host"] = facts.host.model_copy(update={"hostname": name})
    free = _field(Memory, data.get("memory"), "available_bytes", "memory.available_bytes")
    if free != facts.memory.available_bytes:
        changes["memory"] = facts.memory.model_copy(update={"available_bytes": free})
    gpus = []
    for i, (gpu, raw) in enumerate(zip(facts.gpus, data.get("gpus") or [], strict=False)):
        now = {f: _field(Gpu, raw, f, f"gpus.{i}.{f}") for f in MOMENTARY["gpus"]}
        same = all(getattr(gpu, f) == v for f, v in now.items())
        gpus.append(gpu if same else gpu.model_copy(update=now))
    changes["gpus"] = gpus
    # The probes' elapsed times are checked but not kept: nothing a fleet shows reads
    # them, and a copy of every probe record of 10,000 machines is most of the time.
    top = _MS.le or 0.0
    for i, raw in enumerate(data.get("probes") or []):
        ms = raw.get("elapsed_ms") if isinstance(raw, dict) else None
        if not (ms is None or (type(ms) in (int, float) and 0 <= ms <= top)):
            _field(ProbeRecord, raw, "elapsed_ms", f"probes.{i}.elapsed_ms")
    bench = data.get("bench")
    if facts.bench is not None and isinstance(bench, dict):
        changes["bench"] = _bench_momentary(facts.bench, bench)
    return facts.model_copy(update=changes)


def _bench_momentary(first: BenchReport, raw: dict[str, Any]) -> BenchReport:
    """``first`` with the time and load of ``raw``, a bench report of the same key
    (validated whole: its figures stay ``first``'s objects)."""
    from hwadvisor.models.bench import BenchReport
    from hwadvisor.models.common import error_text

    if (bad := bounds.text_problem(raw)) is not None:
        raise _Bad(f"bench.{bad}", "not valid Unicode (a lone surrogate)")
    try:
        now = BenchReport.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise _Bad(".".join(["bench", *map(str, err["loc"])]), error_text(err)) from None
    return first.model_copy(update={f: getattr(now, f) for f in MOMENTARY["bench"]})


def _folder_files(folder: Path) -> list[Path]:
    found = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).parts
        hidden = any(part.startswith(".") for part in rel)
        if p.suffix in REPORT_SUFFIXES and not hidden and p.is_file():
            found.append(p)
    return found


def _lines(text: str | IO[str], where: str) -> Iterator[tuple[str, dict[str, Any] | FleetSkip]]:
    from hwadvisor.io import parse_json_document

    lines = text.splitlines() if isinstance(text, str) else text
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        spot = f"{where}:{n}"
        try:
            yield spot, parse_json_document(line, where=spot, what="facts report")
        except HwadvisorError as exc:
            yield spot, FleetSkip(source=spot, reason=exc.message)
        except ValueError as exc:
            yield spot, FleetSkip(source=spot, reason=_unparsed(exc))


def _documents(
    paths: Sequence[str | Path], stdin: IO[str] | None
) -> Iterator[tuple[str, dict[str, Any] | FleetSkip]]:
    """Every (where, document or skip) the arguments name, in order."""
    from hwadvisor.io import read_json_document

    seen: set[str] = set()
    for path in paths:
        key = str(path)
        if key in seen:
            continue
        seen.add(key)
        if key == STDIN:
            yield from _lines(stdin if stdin is not None else sys.stdin, "<stdin>")
            continue
        p = Path(path)
        files = _folder_files(p) if p.is_dir() else [p]
        if p.is_dir() and not files:
            yield (
                key,
                FleetSkip(
                    source=printable(key), reason="no report (*.json or *.jsonl) in this folder"
                ),
            )
        for f in files:
            where = printable(str(f))  # a name that is not UTF-8: U+FFFD, as JSON can hold
            if f.suffix == ".jsonl":
                try:
                    text = read_limited_text(
                        f,
                        MAX_JSONL_BYTES,
                        FactsError,
                        what="facts reports",
                        missing="facts reports file not found",
                    )
                except HwadvisorError as exc:
                    yield where, FleetSkip(source=where, reason=exc.message)
                    continue
                yield from _lines(text, where)
                continue
            try:
                yield where, read_json_document(f, what="facts report")
            except HwadvisorError as exc:
                yield where, FleetSkip(source=where, reason=exc.message)
            except ValueError as exc:
                yield where, FleetSkip(source=where, reason=_unparsed(exc))


def _unparsed(exc: ValueError) -> str:
    """Why a report's JSON could not be parsed where the parser raised a plain
    ``ValueError`` (an integer of more than 4,300 digits, Python's own limit)."""
    return f"not valid JSON (facts report): {str(exc).split(';')[0]}"


def read_reports(paths: Sequence[str | Path], *, stdin: IO[str] | None = None) -> ReadReports:
    """Load every report the arguments name; an unreadable or invalid one is skipped."""
    reader = _Reader()
    out = ReadReports([], [], [])
    for where, doc in _documents(paths, stdin):
        if isinstance(doc, FleetSkip):
            out.skipped.append(doc)
            continue
        try:
            report, key = reader.report(doc, where)
        except HwadvisorError as exc:
            out.skipped.append(FleetSkip(source=where, reason=exc.message))
            continue
        out.reports.append(report)
        out.keys.append(key)
    return out


# -- estimating, once per hardware key ------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    workload: Workload
    scenario: str | None
    rules: RuleSet | None
    catalog: InstanceCatalog
    devices: dict[str, DeviceEntry]
    own: OwnHardware | None


def _advice(report: Report, ctx: _Context) -> tuple[str | None, bool | None, str | None]:
    """The rule engine's verdict for this machine: device class, fits_here, summary.

    Advice is extra evidence for the ranking, so a failure here leaves it unknown rather
    than skipping a machine that could be estimated.
    """
    from hwadvisor.pipeline import advise, estimate_for_advice

    if ctx.scenario is None or ctx.rules is None:
        return None, None, None
    try:
        est = estimate_for_advice(ctx.workload, facts=report.facts, bench=report.bench)
        advice = advise(
            facts=report.facts,
            scenario=Scenario(ctx.scenario),
            workload=ctx.workload,
            estimates=est,
            rules=ctx.rules,
        )
    except HwadvisorError:
        return None, None, None
    v = advice.verdict
    return v.device.value, v.fits_here, v.summary


def _partial_reason(report: Report) -> str:
    facts = report.facts
    missing = []
    if facts.memory.total_bytes is None:
        missing.append("memory size")
    if report.bench is None and facts.cpu.peak_gflops.fp32 is None:
        missing.append("CPU peak or benchmark")
    what = " and no ".join(missing) or "figures"
    return f"partial report: no {what} to estimate the workload with"


def _price(report: Report, key: str, ctx: _Context) -> Candidate:
    """``report``'s candidate, priced; every machine of hardware ``key`` shares all of it
    but the report."""
    from hwadvisor.cost.fleet import machine_cost
    from hwadvisor.estimate import estimate_workload

    facts, workload = report.facts, ctx.workload
    on, gpus = "here", 1
    if facts.gpus and ctx.scenario not in CPU_SCENARIOS:
        ids = [match_gpu(g.name, g.memory_total_bytes) for g in facts.gpus]
        known = [i for i in ids if i is not None]
        if not known:
            names = ", ".join(sorted({g.name or g.vendor for g in facts.gpus}))
            return Candidate(report, None, key=key, error=f"GPU not in the catalog: {names}")
        # The most common GPU of the machine; all of them for distributed training.
        on = max(set(known), key=known.count)
        gpus = known.count(on) if ctx.scenario == "distributed" else 1
    try:
        est = estimate_workload(
            workload, facts=facts, bench=report.bench, on=[on], gpus=gpus
        ).estimates[0]
    except HwadvisorError as exc:
        return Candidate(report, None, key=key, error=exc.line())
    if (
        est.step_time_s is None
        and est.fits is None
        and (workload.params or workload.flops_per_sample)
    ):
        # The workload has a cost but this machine's report gives nothing to price it with.
        return Candidate(report, None, key=key, error=_partial_reason(report))
    device, fits, summary = _advice(report, ctx)
    try:
        cost = machine_cost(
            facts, est, workload, catalog=ctx.catalog, devices=ctx.devices, own=ctx.own
        )
    except HwadvisorError:
        cost = None
    return Candidate(report, est, None, device, fits, summary, cost, key)


@dataclass(frozen=True)
class FleetPricing:
    """``fleet``'s ranking and pricing options: what orders machines of equal status, the
    user's own hourly price for every machine, and a price file over the shipped catalog."""

    by: RankBy = RankBy.TIME
    own: OwnHardware | None = None
    prices: str | Path | None = None


def fleet_pricing(by: str, prices: str | Path | None, price_per_hour: float | None) -> FleetPricing:
    """``fleet``'s ranking and pricing options, checked, for :func:`gather_fleet` (a bad
    value is a one-line :class:`~hwadvisor.errors.UsageError`)."""
    from hwadvisor.catalog.loader import did_you_mean
    from hwadvisor.cost.model import OwnHardware
    from hwadvisor.errors import UsageError
    from hwadvisor.models.options import PricingOptions

    choices = [b.value for b in RankBy]
    if by not in choices:
        raise UsageError(
            f"--by must be time, cost or energy, not {by!r}{did_you_mean(by, choices)}"
        )
    PricingOptions(price_per_hour=price_per_hour)  # its limits (hwadvisor.models.bounds)
    own = OwnHardware(price_per_hour=price_per_hour) if price_per_hour is not None else None
    return FleetPricing(RankBy(by), own, prices)


def _keys_of(reports: Sequence[Report]) -> list[str]:
    """Hardware keys of reports read by another path (their documents rebuilt)."""
    return [hardware_key(r.facts.model_dump(mode="json")) + repr(r.verdicts) for r in reports]


def gather_fleet(
    paths: Sequence[str | Path],
    workload: Workload,
    *,
    scenario: str | None = None,
    read: ReadReports | tuple[list[Report], list[FleetSkip]] | None = None,
    pricing: FleetPricing | None = None,
) -> FleetReport:
    """Load each report, estimate ``workload`` there once per hardware key, price it, rank.

    ``read`` is the result of :func:`read_reports` when the caller has already loaded them;
    ``pricing`` orders the machines and prices them (:class:`FleetPricing`: the user's own
    hourly figure for every machine, a price file over the shipped instance catalog, see
    :mod:`hwadvisor.catalog.price_files`).
    """
    from hwadvisor.catalog import load_devices
    from hwadvisor.catalog.instances import load_instances
    from hwadvisor.engine import load_rules

    pricing = pricing or FleetPricing()
    got = read if read is not None else read_reports(paths)
    reports, skipped = got[0], got[1]
    keys = got.keys if isinstance(got, ReadReports) else _keys_of(reports)
    ctx = _Context(
        workload=workload,
        scenario=scenario,
        # The shipped rules (and HWADVISOR_RULES_PATH), loaded once for the whole fleet.
        rules=load_rules() if scenario is not None else None,
        catalog=load_instances(pricing.prices),
        devices=load_devices(),
        own=pricing.own,
    )
    shared: dict[str, Candidate] = {}
    candidates = []
    for report, key in zip(reports, keys, strict=True):
        if key in shared:
            candidates.append(replace(shared[key], report=report))
        else:
            candidates.append(shared.setdefault(key, _price(report, key, ctx)))
    return rank_fleet(candidates, workload, scenario=scenario, skipped=skipped, by=pricing.by)
