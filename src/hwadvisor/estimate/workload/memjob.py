"""The fake job memtrack runs: a meta-built model on fake CPU tensors, its optimizer and
input, the live-bytes record both trackers fill, and the storage helpers they share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hwadvisor.errors import UsageError


@dataclass(frozen=True)
class Live:
    """Live storage bytes at one moment, by what they are."""

    parameters: int = 0
    gradients: int = 0
    optimizer: int = 0
    activations: int = 0
    temporaries: int = 0

    @property
    def total(self) -> int:
        """All live bytes."""
        return (
            self.parameters + self.gradients + self.optimizer + self.activations + self.temporaries
        )


def storages(obj: Any) -> list[Any]:
    """The untyped storages of the tensors in ``obj``."""
    import torch
    from torch.utils._pytree import tree_flatten

    return [t.untyped_storage() for t in tree_flatten(obj)[0] if isinstance(t, torch.Tensor)]


def nbytes(obj: Any) -> int:
    """Bytes of the distinct storages of the tensors in ``obj``."""
    seen: dict[int, int] = {}
    for st in storages(obj):
        seen[st._cdata] = st.nbytes()
    return sum(seen.values())


class FakeJob:
    """A fake model, its optimizer and input: what both trackers run."""

    def __init__(
        self,
        model: Any,
        mode: Any,
        batch: int,
        shape: list[int],
        tokens: bool,
        precision: str,
        optimizer: str,
    ) -> None:
        import torch

        self.model, self.mode, self.precision = model, mode, precision
        self.out: Any = None
        self.half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
        params = list(model.parameters())
        with mode:
            if self.half is not None:
                # Mixed precision with fp32 master weights (the ZeRO paper's accounting):
                # 16-bit weights and gradients in the model, fp32 copies in the optimizer.
                self.masters = torch.nn.ParameterList(
                    [torch.nn.Parameter(p.detach().float()) for p in params]
                )
                opt_params = list(self.masters)
            else:
                self.masters = torch.nn.ParameterList()
                opt_params = params
            self.opt: Any
            if optimizer == "sgd":
                self.opt = torch.optim.SGD(opt_params, lr=0.01, momentum=0.9)
            else:
                self.opt = torch.optim.AdamW(opt_params)
            size = [batch, *shape]
            self.x = (
                torch.zeros(size, dtype=torch.long)
                if tokens
                else torch.zeros(size, dtype=self.half or torch.float32)
            )

    def _autocast(self) -> Any:
        import torch

        return torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "amp")

    def release(self) -> None:
        """Drop the training step's output (the loop's next iteration would)."""
        self.out = None

    def infer(self) -> None:
        """One inference pass: eval mode, no gradients."""
        import torch

        self.model.eval()
        with torch.no_grad(), self._autocast():
            out = self.model(self.x)
        del out
        self.model.train()

    def forward(self) -> Any:
        """Forward pass and a scalar loss over every floating output.

        The output stays referenced (``self.out``) through the backward pass and the
        optimizer step, as in the usual loop (``outputs = model(x); loss =
        criterion(outputs, y); loss.backward(); opt.step()``), until ``release``."""
        with self._autocast():
            out = self.model(self.x)
            self.out = out
            floats = [t for t in flat_tensors(out) if t.is_floating_point() and t.requires_grad]
            if not floats:
                raise UsageError("the model's output needs a floating tensor that requires grad")
            loss = sum(t.float().sum() for t in floats)
        return loss

    def step(self) -> None:
        """The optimizer step (16-bit gradients go to the fp32 masters one by one)."""
        if self.half is not None:
            for p, m in zip(self.model.parameters(), self.masters, strict=True):
                if p.grad is not None:
                    m.grad = p.grad.float()
                    p.grad = None
        self.opt.step()
        if self.half is not None:
            for p, m in zip(self.model.parameters(), self.masters, strict=True):
                p.data.copy_(m.data)
                m.grad = None

    def state(self) -> list[Any]:
        """Tensors of the optimizer state."""
        import torch

        return [
            v for s in self.opt.state.values() for v in s.values() if isinstance(v, torch.Tensor)
        ]


def flat_tensors(out: Any) -> list[Any]:
    """The tensors in ``out`` (any nesting)."""
    import torch
    from torch.utils._pytree import tree_flatten

    return [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]


def fake_model(model: Any, mode: Any, dtype: Any = None) -> Any:
    """``model`` (on the meta device) with fake CPU parameters and buffers of ``mode``.

    Tied parameters stay tied. ``dtype`` casts floating parameters and buffers.
    """
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    memo: dict[int, Any] = {}

    def fake(t: Any) -> Any:
        if id(t) not in memo:
            dt = dtype if dtype is not None and t.is_floating_point() else t.dtype
            meta = torch.empty(t.shape, dtype=dt, device="meta")
            memo[id(t)] = FakeTensor(mode, meta, torch.device("cpu"))
        return memo[id(t)]

    params: dict[int, Any] = {}
    for mod in model.modules():
        for name, p in list(mod._parameters.items()):
            if p is not None:
                if id(p) not in params:
                    params[id(p)] = torch.nn.Parameter(fake(p), requires_grad=p.requires_grad)
                mod._parameters[name] = params[id(p)]
        for name, b in list(mod._buffers.items()):
            if b is not None:
                mod._buffers[name] = fake(b)
    return model
