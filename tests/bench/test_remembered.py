"""A busy quick bench takes this machine's last steady CPU figures (bench.remembered)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from hwadvisor.bench.remembered import cache_dir, recall, remember, steady, with_remembered
from hwadvisor.models.bench import BenchReport, BenchResult
from hwadvisor.models.facts import Cpu, CpuFeatures, Facts, PeakGflops

FACTS = Facts(
    cpu=Cpu(vendor="AMD", model="AMD EPYC", microarchitecture="zen4", usable_cores=2,
            features=CpuFeatures(avx2=True, avx512f=True), peak_gflops=PeakGflops(fp32=166.0))
)  # fmt: skip


def _report(gflops: float, *, reliable: bool = True, load: float = 0.2,
            when: str = "2026-12-01T12:40:00Z") -> BenchReport:  # fmt: skip
    def r(kernel: str, shape: list[int], value: float, unit: str = "GFLOP/s") -> BenchResult:
        return BenchResult(device="cpu", kernel=kernel, dtype="fp32", shape=shape, value=value,
                           unit=unit, median_s=1e-3, iqr_s=0.0, runs=8, threads=2,
                           reliable=reliable)  # fmt: skip

    results = [r("matmul", [512, 512, 512], gflops), r("conv2d", [8, 64, 56, 56, 64, 3, 3],
               gflops * 1.1), r("triad", [1 << 23], 20.0, "GB/s")]  # fmt: skip
    return BenchReport(budget_s=3.0, elapsed_s=3.0, torch_version="2.13.0+cpu",
                       load_avg_1m=load, results=results, generated_at=when)  # fmt: skip


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_a_steady_run_is_kept_and_a_busy_one_takes_its_figures(cache: Path) -> None:
    quiet = _report(200.0)
    assert steady(quiet)
    kept = with_remembered(quiet, FACTS)
    assert kept is quiet and len(list(cache.glob("bench-cpu-*.json"))) == 1
    busy = _report(40.0, reliable=False, load=6.0, when="2026-12-01T13:00:00Z")
    assert not steady(busy)
    used = with_remembered(busy, FACTS)
    matmul = next(r for r in used.results if r.kernel == "matmul")
    assert matmul.value == 200.0 and matmul.reliable is not False
    assert matmul.measured_at == "2026-12-01T12:40:00Z"
    assert used.load_avg_1m == 6.0  # this run's load stays: the verdict still sees it
    # The busy run replaced nothing on disk: the next busy run gets the quiet figures too.
    assert recall(FACTS, busy) is not None and recall(FACTS, busy).results[0].value == 200.0  # type: ignore[union-attr]


def test_nothing_is_kept_or_used_across_machines_or_when_off(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember(_report(200.0), FACTS)
    other = FACTS.model_copy(update={"cpu": FACTS.cpu.model_copy(update={"usable_cores": 4})})
    busy = _report(40.0, reliable=False, load=6.0)
    assert with_remembered(busy, other) is busy  # another machine (or core count)
    assert with_remembered(busy, None) is busy  # no facts: no way to tell machines apart
    monkeypatch.setenv("HWADVISOR_CACHE_DIR", "off")
    assert cache_dir() is None and with_remembered(busy, FACTS) is busy


def test_old_or_broken_files_are_not_used(cache: Path) -> None:
    path = remember(_report(200.0, when="2026-10-01T00:00:00Z"), FACTS)
    assert path is not None
    busy = _report(40.0, reliable=False, load=6.0)
    assert recall(FACTS, busy, today=dt.date(2026, 10, 20)) is not None
    assert recall(FACTS, busy, today=dt.date(2026, 12, 1)) is None  # over 30 days
    path.write_text("{not json", encoding="utf-8")
    assert recall(FACTS, busy, today=dt.date(2026, 10, 20)) is None


def test_an_unwritable_folder_costs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    monkeypatch.setenv("HWADVISOR_CACHE_DIR", str(blocker / "sub"))
    assert remember(_report(200.0), FACTS) is None
    busy = _report(40.0, reliable=False, load=6.0)
    assert with_remembered(busy, FACTS) is busy


def test_a_steady_run_takes_the_faster_of_its_own_and_the_kept_figures(cache: Path) -> None:
    with_remembered(_report(200.0, when="2026-12-01T12:40:00Z"), FACTS)
    slower = with_remembered(_report(150.0, when="2026-12-01T12:50:00Z"), FACTS)
    matmul = next(r for r in slower.results if r.kernel == "matmul")
    assert matmul.value == 200.0 and matmul.measured_at == "2026-12-01T12:40:00Z"
    faster = with_remembered(_report(260.0, when="2026-12-01T13:00:00Z"), FACTS)
    matmul = next(r for r in faster.results if r.kernel == "matmul")
    assert matmul.value == 260.0 and matmul.measured_at is None
    # The kept file now holds the fastest of each figure, each with its own time.
    busy = with_remembered(_report(40.0, reliable=False, load=6.0), FACTS)
    assert {r.value for r in busy.results if r.kernel == "matmul"} == {260.0}


def test_a_figure_kept_too_long_ago_drops_out_alone(cache: Path) -> None:
    today = dt.date.today()

    def stamp(days_ago: int) -> str:
        return f"{(today - dt.timedelta(days=days_ago)).isoformat()}T00:00:00Z"

    remember(_report(300.0, when=stamp(20)), FACTS)
    newer = with_remembered(_report(200.0, when=stamp(5)), FACTS)
    assert {r.value for r in newer.results if r.kernel == "matmul"} == {300.0}
    busy = _report(40.0, reliable=False, load=6.0)
    kept = recall(FACTS, busy, today=today)
    assert kept is not None and {r.value for r in kept.results if r.kernel == "matmul"} == {300.0}
    # Fifteen days on, the 300 is 35 days old and drops out; the slower 200 of five days
    # ago was never kept in its place, so no matmul figure is left to use.
    later = recall(FACTS, busy, today=today + dt.timedelta(days=15))
    assert later is None or not [r for r in later.results if r.kernel == "matmul"]


def test_an_unsteady_figure_of_another_dtype_leaves_a_run_steady() -> None:
    quiet = _report(200.0)
    bf16 = quiet.results[0].model_copy(
        update={"dtype": "bf16", "value": 1.2, "runs": 1, "reliable": False}
    )
    # No native bf16: one 0.2 s call, its spread unknown. The estimates
    # rest on the fp32 figures, which are steady, so the run is kept.
    assert steady(quiet.model_copy(update={"results": [*quiet.results, bf16]}))
    fp32 = quiet.results[0].model_copy(update={"reliable": False})
    assert not steady(quiet.model_copy(update={"results": [fp32, *quiet.results[1:]]}))


def test_a_run_whose_speed_moved_takes_the_kept_figures_and_still_says_so(cache: Path) -> None:
    """Each figure steady, but the first timed again at the end at 0.6x: the run is not
    steady, so the kept figures stand in, and the drift stays in its evidence."""
    from hwadvisor.bench.reliability import drift

    with_remembered(_report(200.0), FACTS)
    run = _report(120.0, when="2026-12-01T13:00:00Z")
    first = run.results[0]
    moved = run.model_copy(update={"derived": [drift(first, 0.6 * first.value)]})
    held = run.model_copy(update={"derived": [drift(first, 0.95 * first.value)]})
    assert steady(held) and not steady(moved)
    used = with_remembered(moved, FACTS)
    matmul = next(r for r in used.results if r.kernel == "matmul")
    assert matmul.value == 200.0 and matmul.measured_at == "2026-12-01T12:40:00Z"
    (said,) = [d for d in used.derived if d.id == "cpu.end_over_start"]
    assert said.ratio == pytest.approx(0.6) and "speed moved" in said.text


def test_figures_an_older_version_kept_of_kernels_no_longer_measured_are_left_out(
    cache: Path,
) -> None:
    old = _report(200.0)
    sweep = old.results[0].model_copy(
        update={"kernel": "eltwise", "unit": "GB/s", "level": "dram", "working_set_bytes": 1 << 26}
    )
    path = remember(old.model_copy(update={"results": [*old.results, sweep]}), FACTS)
    assert path is not None and "eltwise" in path.read_text(encoding="utf-8")
    kept = recall(FACTS, _report(40.0, reliable=False, load=6.0), today=dt.date(2026, 12, 2))
    assert kept is not None
    assert {r.kernel for r in kept.results} == {"matmul", "conv2d", "triad"}


def test_a_wavering_small_size_of_the_ladder_leaves_a_run_steady() -> None:
    quiet = _report(200.0)
    small = quiet.results[0].model_copy(update={"shape": [64, 64, 64], "value": 5.0, "reliable": False})  # fmt: skip
    assert steady(quiet.model_copy(update={"results": [small, *quiet.results]}))
    large = quiet.results[0].model_copy(update={"shape": [2048] * 3, "reliable": False})
    assert not steady(quiet.model_copy(update={"results": [large, *quiet.results]}))
