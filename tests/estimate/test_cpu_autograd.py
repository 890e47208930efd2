"""The small objects autograd and the argument parser make, in the counted sequence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from hwadvisor.estimate.workload import cpu_autograd as ag  # noqa: E402
from hwadvisor.estimate.workload.cpu_alloc import Event  # noqa: E402
from hwadvisor.estimate.workload.memtrack import OWN_TRACKER, count_memory  # noqa: E402


def _mlp() -> Any:
    with torch.device("meta"):
        return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def _count() -> Any:
    return count_memory(_mlp, [16], 8, tokens=False, trackers=(OWN_TRACKER,))


def _first_pass(events: Sequence[Event]) -> list[Event]:
    """The events of the first pass or step (the repeats are re-keyed (2, key))."""
    return [e for e in events if not (isinstance(e[1], tuple) and e[1][0] in (2, 3))]


def _sizes(events: Sequence[Event], op: str) -> list[int]:
    return [n for o, _, n in events if o == op]


def test_recorded_needs_grad_mode_and_an_input_needing_grad() -> None:
    w = torch.ones(3, requires_grad=True)
    x = torch.ones(3)
    add = torch.ops.aten.add.Tensor
    assert ag.recorded(add, (w, x))
    assert not ag.recorded(add, (x, x))
    assert not ag.recorded(torch.ops.aten.detach.default, (w,))
    assert not ag.recorded(torch.ops.aten.ones_like.default, (w,))
    with torch.no_grad():
        assert not ag.recorded(add, (w, x))


def test_node_sizes_fall_back_to_the_traced_median() -> None:
    assert ag.node_bytes(torch.ops.aten.convolution.default) == 768
    assert ag.node_bytes(torch.ops.aten.gelu.default) == ag.NODE_DEFAULT
    assert sorted(ag.NODE_BYTES.values())[len(ag.NODE_BYTES) // 2] == ag.NODE_DEFAULT


def test_each_leaf_gets_one_accumulator_per_graph() -> None:
    w, b = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    seen: set[int] = set()
    assert ag.new_leaves((w, [b, torch.ones(3)]), seen) == [w, b]
    assert ag.new_leaves((w, b), seen) == []
    assert ag.new_leaves((w * 2,), seen) == []  # not a leaf: it has a grad_fn


def test_python_numbers_in_tensor_slots_are_wrapped() -> None:
    x = torch.ones(3)
    assert ag.wrapped_scalars(torch.ops.aten.mul_.Tensor, (x, 0.5)) == 1
    assert ag.wrapped_scalars(torch.ops.aten.add_.Tensor, (x, 1)) == 1
    assert ag.wrapped_scalars(torch.ops.aten.mul_.Tensor, (x, x)) == 0
    # a Scalar slot takes the number as it is
    assert ag.wrapped_scalars(torch.ops.aten.lerp_.Scalar, (x, x, 0.1)) == 0


def test_training_step_holds_the_graph_until_its_output_is_dropped() -> None:
    c = _count()
    step = _first_pass(c.train_events)
    nodes = [n for n in _sizes(step, "s") if n == ag.NODE_BYTES["aten.addmm.default"]]
    assert len(nodes) == 2  # one per Linear's addmm
    params = sum(1 for _ in _mlp().parameters())
    assert _sizes(step, "s").count(ag.ACCUMULATE_GRAD) == params
    graph = {k for o, k, n in step if o == "s" and n in (*ag.NODE_BYTES.values(), 472)}
    # the graph is freed last: after every tensor the optimizer step made
    last_alloc = max(i for i, (o, _, _) in enumerate(step) if o == "a")
    frees = [i for i, (o, k, _) in enumerate(step) if o == "f" and k in graph]
    assert len(frees) == len(graph) and min(frees) > last_alloc


def test_backward_engine_blocks_one_pair_per_graph_object() -> None:
    step = _first_pass(_count().train_events)
    graph = sum(1 for o, _, n in step if o == "s" and n in (*ag.NODE_BYTES.values(), 472))
    start = next(i for i, (o, _, n) in enumerate(step) if o == "s" and n == ag.ENGINE_BLOCKS[0])
    run = step[start : start + 2 * graph]
    # made together as the backward pass starts, a pair per node, freed by its end
    assert [n for _, _, n in run] == list(ag.ENGINE_BLOCKS) * graph
    keys = {k for _, k, _ in run}
    assert sum(1 for o, k, _ in step if o == "f" and k in keys) == len(keys)


def test_inference_records_no_graph() -> None:
    infer = _first_pass(_count().infer_events)
    sizes = set(_sizes(infer, "s"))
    assert not sizes & {*ag.NODE_BYTES.values(), ag.ACCUMULATE_GRAD, ag.AUTOGRAD_META}


def test_adamw_wraps_its_python_numbers_per_parameter() -> None:
    step = _first_pass(_count().train_events)
    params = sum(1 for _ in _mlp().parameters())
    outer = _sizes(step, "k").count(ag.SCALAR_OUTER)
    inner = _sizes(step, "k").count(ag.SCALAR_INNER)
    # the for-loop AdamW: decay, the step count, beta2, the bias correction, eps; and
    # the loss's ``sum`` (0 + the output's sum)
    assert outer == inner == 5 * params + 1


def _metas_of(layers: list[Any]) -> int:
    def build() -> Any:
        with torch.device("meta"):
            return torch.nn.Sequential(*layers)

    c = count_memory(build, [3, 8, 8], 2, tokens=False, trackers=(OWN_TRACKER,))
    return _sizes(_first_pass(c.train_events), "s").count(ag.AUTOGRAD_META)


def test_only_differentiable_outputs_get_autograd_meta() -> None:
    conv = [torch.nn.Conv2d(3, 4, 3)]
    base = _metas_of(conv)
    # batch norm returns three tensors, max pooling two: one of each gets a grad_fn
    assert _metas_of([*conv, torch.nn.BatchNorm2d(4)]) == base + 1
    assert _metas_of([*conv, torch.nn.MaxPool2d(2, return_indices=False)]) == base + 1
