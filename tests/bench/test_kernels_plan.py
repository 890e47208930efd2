"""What the bench plans on each kind of device, in which order, and that each statement runs."""

from __future__ import annotations

import pytest

from hwadvisor.bench.devices import Target
from hwadvisor.bench.kernels import (
    CPU_FP32,
    conv_backward_work,
    conv_work,
    plan,
    reachable_l3,
    stream_elements,
)
from hwadvisor.bench.timing import release_memory
from hwadvisor.models.facts import Cpu, Facts

torch = pytest.importorskip("torch")

CPU = Target("cpu", "cpu", None, "test CPU", None, 2)
CUDA = Target("cuda:0", "cuda", 0, "NVIDIA H100 80GB HBM3", None, 1)
#: The figures the estimator reads, and nothing else.
READ = {"matmul", "conv2d", "conv2d_backward", "copy", "triad", "dispatch", "h2d", "d2h"}


def test_a_cpu_plans_the_figures_the_estimator_reads_most_needed_first() -> None:
    cases = plan(torch, CPU, None, None)
    kinds = [(c.kernel, c.dtype) for c in cases]
    assert {k for k, _ in kinds} == READ - {"h2d", "d2h"}
    fp32 = [c.ladder[c.start][0] for c in cases if (c.kernel, c.dtype) == ("matmul", "fp32")]
    assert sorted(fp32) == [64, 128, 256, 512, 1024, 2048] and fp32 == list(CPU_FP32)
    # the middle of the fp32 ladder and the bandwidth first; other dtypes, fewer sizes, last
    assert kinds[:4] == [("matmul", "fp32")] * 2 + [("copy", "fp32"), ("triad", "fp32")]
    assert kinds.index(("matmul", "bf16")) > kinds.index(("conv2d_backward", "fp32"))
    assert kinds.count(("matmul", "bf16")) == kinds.count(("matmul", "int8")) == 2
    assert ("conv2d", "bf16") in kinds and ("conv2d_backward", "bf16") not in kinds


def test_a_gpu_plans_tensor_core_dtypes_and_the_host_link_but_no_dispatch() -> None:
    cases = plan(torch, CUDA, None, None)  # planning allocates nothing: a CPU-only torch can
    kinds = [(c.kernel, c.dtype) for c in cases]
    assert {k for k, _ in kinds} == READ - {"dispatch"}
    assert {d for k, d in kinds if k == "matmul"} == {"fp32", "tf32", "bf16", "fp16", "int8"}
    assert kinds.count(("matmul", "bf16")) == 3 and ("conv2d", "bf16") in kinds
    # the host link with the convolutions, before the ladder's ends and other dtypes
    host = next(c.tier for c in cases if c.kernel == "h2d")
    assert host == next(c.tier for c in cases if c.kernel == "conv2d")
    assert host < min(c.tier for c in cases if c.dtype == "tf32")
    assert [c.tier for c in cases] == sorted(c.tier for c in cases)


def test_work_is_counted_as_documented() -> None:
    mm = next(c for c in plan(torch, CPU, None, None) if c.kernel == "matmul")
    assert mm.work((256, 256, 256)) == 2 * 256**3
    assert conv_work((4, 64, 56, 56)) == 2 * 4 * 64 * 64 * 9 * 56 * 56
    assert conv_backward_work((4, 64, 56, 56)) == 2 * conv_work((4, 64, 56, 56))
    copy, triad = [c for c in plan(torch, CPU, None, None) if c.kernel in ("copy", "triad")]
    assert copy.work((1000,)) == 2 * 4 * 1000 and triad.work((1000,)) == 3 * 4 * 1000


def test_bandwidth_buffers_follow_the_cache_the_threads_reach() -> None:
    # a guest shown its host's whole 480 MiB L3: counted at 48 MB a thread
    guest = Facts(cpu=Cpu(l3_bytes=480 * 2**20))
    assert reachable_l3(guest, 2) == 96 * 10**6
    assert stream_elements(CPU, guest, None) * 4 == 4 * 96 * 10**6
    # 64 MiB at least, and at most a twelfth of free memory
    assert stream_elements(CPU, Facts(cpu=Cpu(l3_bytes=2**20)), None) * 4 == 64 * 2**20
    assert stream_elements(CPU, guest, 1200 * 2**20) * 4 == 100 * 2**20


def test_every_cpu_statement_runs_at_its_smallest_shape() -> None:
    for case in plan(torch, CPU, None, None):
        shape = case.ladder[0]
        if case.kernel in ("copy", "triad"):
            shape = (1024,)
        try:
            case.build(shape)()
        except RuntimeError as exc:  # a dtype this CPU's torch lacks is a skip, not a bug
            assert case.dtype != "fp32", exc
        finally:
            if case.after is not None:
                case.after()
    release_memory(torch, "cpu")
