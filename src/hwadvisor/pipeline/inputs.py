"""The pipeline's inputs: the documents it reads and the two stages that touch the machine.

Saved documents (facts, bench figures, rule folders) are read and validated here; the
probe and the microbenchmark are started here and nowhere else in the pipeline, so the
estimator and the rule engine below only ever see the models these functions return.
Progress is the caller's: ``progress`` is a function returning a context manager that
yields a ``progress(label, fraction)`` callback, or None for no bar (the CLI draws a
rich bar on stderr, a test passes nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hwadvisor.errors import HwadvisorError, MissingDependencyError
from hwadvisor.models.options import WorkloadOptions
from hwadvisor.models.workload import INFERENCE_SCENARIOS, Scenario, Task

if TYPE_CHECKING:
    from hwadvisor.engine import RuleSet
    from hwadvisor.models.bench import BenchReport
    from hwadvisor.models.facts import Facts
    from hwadvisor.models.workload import Workload

#: ``progress(label, fraction)``, fraction from 0 to 1.
Progress = Callable[[str, float], None]
#: Opens a progress display for a long step: ``with scope() as progress: ...``.
ProgressScope = Callable[[], AbstractContextManager[Progress | None]]

#: Scenarios whose job is inference rather than training (defined on the model).
INFER_SCENARIOS = INFERENCE_SCENARIOS


def no_progress() -> AbstractContextManager[Progress | None]:
    """The default :data:`ProgressScope`: no display at all."""
    return nullcontext(None)


def load_facts(path: str | Path) -> Facts:
    """A saved facts document (``check --json``), version-checked and validated."""
    from hwadvisor.io import read_json_document
    from hwadvisor.models.facts import validate_facts

    return validate_facts(read_json_document(path, what="facts"), where=str(path))


def load_bench(path: str | Path) -> BenchReport:
    """A saved bench document (``bench --json``), version-checked and validated."""
    from hwadvisor.io import read_json_document
    from hwadvisor.models.bench import BenchReport
    from hwadvisor.models.common import validate_document

    data = read_json_document(path, what="bench report")
    return validate_document(BenchReport, data, where=str(path), what="bench report")


def load_rules(rules_dirs: list[str] | None = None) -> RuleSet:
    """The shipped rules, then ``HWADVISOR_RULES_PATH``, then each ``--rules`` folder."""
    from hwadvisor.engine import load_rules as load

    return load(rules_dirs or [])


def probe_here(*, timeout: float | None = None) -> Facts:
    """This machine's facts (the probe never fails on a machine's quirks)."""
    from hwadvisor.probe import probe_machine

    return probe_machine() if timeout is None else probe_machine(timeout=timeout)


def probe_or_none() -> Facts | None:
    """This machine's facts, or None when the probe cannot run at all.

    For the commands that still have something to say without them (``bench`` reports
    no efficiencies, ``estimate`` prices the catalog devices).
    """
    try:
        return probe_here()
    except Exception:
        return None


@dataclass(frozen=True)
class BenchAttempt:
    """The quick microbenchmark's report, or None and the reason it could not run."""

    report: BenchReport | None
    reason: str | None = None


def quick_bench(facts: Facts | None, progress: ProgressScope = no_progress) -> BenchAttempt:
    """The quick CPU microbenchmark the advice and the estimates use; never raises for a
    missing or broken torch (the reason is returned instead). A steady run's figures are
    kept (the faster of each, its own or the kept one); a busy run takes the kept CPU
    figures (``bench.remembered``)."""
    try:
        from hwadvisor.bench import run_bench
        from hwadvisor.bench.remembered import with_remembered

        with progress() as bar:
            report = run_bench(facts=facts, device="cpu", quick=True, progress=bar)
    except HwadvisorError as exc:
        return BenchAttempt(None, exc.message)
    except ImportError as exc:
        return BenchAttempt(None, f"microbenchmark unavailable ({exc})")
    # Kept when steady; when not, this machine's kept steady CPU figures stand in.
    return BenchAttempt(with_remembered(report, facts))


def bench_into_facts(
    facts: Facts, seconds: float | None, progress: ProgressScope = no_progress
) -> tuple[Facts, bool]:
    """``facts`` with the microbenchmark of every device added (``check --bench``).

    Quick unless ``seconds`` is given. Without torch the facts get a ``bench`` probe
    record instead: absent when torch is not installed, an error when it fails to
    import. The flag says whether Ctrl-C stopped the benchmark.
    """
    from hwadvisor.models.facts import ProbeRecord
    from hwadvisor.models.plain import ProbeStatus

    try:
        from hwadvisor.bench import run_bench

        with progress() as bar:
            report = run_bench(
                facts=facts, device="all", budget_s=seconds, quick=seconds is None, progress=bar
            )
    except MissingDependencyError as exc:
        broken = exc.__cause__ is not None and not isinstance(exc.__cause__, ModuleNotFoundError)
        record = ProbeRecord(
            name="bench",
            status=ProbeStatus.ERROR if broken else ProbeStatus.ABSENT,
            source="torch",
            error=exc.message,
        )
        return facts.model_copy(update={"probes": [*facts.probes, record]}), False
    record = ProbeRecord(
        name="bench",
        status=ProbeStatus.ERROR if report.interrupted else ProbeStatus.OK,
        source="torch.utils.benchmark",
        elapsed_ms=round(report.elapsed_s * 1000, 1),
        error="interrupted" if report.interrupted else None,
    )
    updated = facts.model_copy(update={"bench": report, "probes": [*facts.probes, record]})
    return updated, report.interrupted


def workload_for(
    scenario: Scenario | None,
    options: WorkloadOptions | None = None,
    catalogs: list[Path] | None = None,
) -> Workload:
    """The workload from the user's options (see :func:`~hwadvisor.estimate.build_workload`).

    Without a ``task`` it follows the scenario: for ``inference`` and ``edge`` a language
    model serves (``serve``) and any other model infers, otherwise training (and when
    there is no scenario); a ``--method`` makes it fine-tuning. ``catalogs`` are extra
    model catalogs (``--catalog``).
    """
    from hwadvisor.estimate import build_workload

    inference = scenario is not None and scenario.is_inference
    return build_workload(
        options or WorkloadOptions(), extra_catalogs=catalogs, inference_default=inference
    )


def scenario_for(workload: Workload) -> Scenario:
    """The scenario a workload implies when none is given: inference or training."""
    serving = workload.task in (Task.INFER, Task.SERVE)
    return Scenario.INFERENCE if serving else Scenario.TRAINING
