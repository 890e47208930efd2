"""The limits on every number hwadvisor reads from a file or the command line.

A facts, bench or fleet report, a ``--catalog`` entry and the pricing options are
untrusted input: a careless edit or a hostile file can hold ``NaN``, ``Infinity``, a
negative size or a 5,000-digit integer. Each number field of those documents carries
one :class:`~hwadvisor.models.plain.Bound` from the table below (in its ``Annotated`` type, see
:mod:`hwadvisor.models.facts`, :mod:`hwadvisor.models.bench`,
:mod:`hwadvisor.catalog.schema`, :mod:`hwadvisor.models.options`), so every loader that
validates the document refuses the value with one line naming the file and the field
(exit 2), and a probe's impossible reading is left unknown
(:func:`hwadvisor.models.plain.settled`). Every number must also be finite, and every
string valid Unicode (:func:`text_problem`).

The limits are wide: the largest real value of each is far inside. They are there to
stop what no machine has (a 10^300-byte memory, a million GPUs), not to judge a real one.

======================  =====================  =============================================
Limit                   Range                  What it bounds, and why there
======================  =====================  =============================================
``BYTES``, ``SIZE``     0 (>0) .. 10^16 bytes  memory, caches, /dev/shm, GPU memory, a
                                               working set, a catalog model's bytes per
                                               sample: 10 PB, over 100x the largest
                                               single-image machines (tens of TB)
``GPUS``                1 .. 100,000           GPUs of a job (``--gpus``) or one catalog node
``CORES``               1 .. 100,000           cores, hardware threads, usable cores, vCPUs,
                                               threads of a figure (``QUOTA_CORES``: a
                                               cgroup's quota, >0): the largest single-image
                                               machines have a few thousand threads
``SOCKETS``             1 .. 1,024             sockets and NUMA nodes (such machines have
                                               tens)
``CLOCK_MHZ``           >0 .. 100,000 MHz      CPU clocks: 100 GHz, ten times any record
``CLOCK_GHZ``           >0 .. 100 GHz          the same, in a catalog entry
``GFLOPS``              0 .. 10^9              a machine's peak or measured rate (GFLOP/s,
                                               GOP/s, GB/s, Mop/s): one exa-op per second
``TFLOPS``              10^-6 .. 10^6          a catalog device's peak (TFLOP/s, TOPS) or
                                               bandwidth (GB/s): from one MFLOP/s (a listed
                                               peak of 0 divides by zero; absent means
                                               unsupported) to 1 EFLOP/s for one device,
                                               over 50x the largest dense peak in the
                                               shipped catalog (13.5 PFLOP/s)
``WATTS``               0 .. 100,000 W         power of one device or package: 100 kW
``CELSIUS``             -273.15 .. 1,000 °C    a temperature: absolute zero to past any
                                               silicon's melting point
``PERCENT``             0 .. 100 %             utilisation
``LINK_GEN``            1 .. 32                PCIe generation and lane width (x32 is the
                                               widest link the PCIe standard defines)
``LINKS``               0 .. 1,024             NVLink links of one GPU
``UNITS``               1 .. 10^6              streaming multiprocessors of one GPU
``SECONDS``             0 .. 10^8 s            a time (bench budget, run, median, import):
                                               about three years
``MILLISECONDS``        0 .. 10^11 ms          a probe's elapsed time (the same three years)
``RUNS``                0 .. 10^9              timed runs of one figure
``RATIO``               0 .. 10^6              efficiency, spread and speed-up ratios
``LOAD``                0 .. 10^6              a load average (runnable threads)
``SHAPE_DIM``           0 .. 10^12             one dimension of a measured shape (the
                                               workload's own limit on a sample's elements)
``USD_PER_HOUR``        0 .. 10^6 USD/h        ``--price-per-hour``: a million dollars an hour
``USD``                 0 .. 10^10 USD         ``--purchase-usd``: ten billion dollars
``YEARS``               >0 .. 100 years        ``--years`` a purchase is spread over
``USD_PER_KWH``         0 .. 100 USD/kWh       ``--electricity-usd-kwh``: 100x the dearest
                                               retail tariffs
``LAYERS``              1 .. 10,000            a catalog model's layers
``VOCAB``               1 .. 10^7              a catalog model's vocabulary
``CONTEXT``             1 .. 10^8 tokens       a catalog model's context, sequence length
                                               and sliding window
``WIDTH``               1 .. 10^7              a catalog model's widths (hidden, MLP, head)
``PARAMS``              1 .. 10^15             a catalog model's parameters (the workload's
                                               own ``--params`` limit)
``FLOPS_PER_SAMPLE``    >0 .. 10^21            a catalog model's forward FLOPs per sample
                                               (the workload's own limit)
``HEADS``               1 .. 100,000           a catalog model's attention heads and experts
``KERNELS``             0 .. 10^9              a catalog model's operator launches per pass
``FLEET_LIMIT``         1 .. 10^6              ``fleet --limit``: groups the table shows
``GIB``                 0 .. 10^16 bytes       memory in GiB (a price file's columns)
``GPU_COUNT``           0 .. 100,000           GPUs of a price file's row (0: a CPU instance)
======================  =====================  =============================================

The workload options (``--batch-size``, ``--params``, ``--qps``, ``--deadline`` ...) are
bounded by the :class:`~hwadvisor.models.workload.Workload` model itself, which names the
option of a value out of bounds. This module imports no pydantic: ``check --json`` reads
the same markers when it settles what the probes found.
"""

from __future__ import annotations

import json
import math

from hwadvisor.models.plain import Bound

__all__ = ["LIMITS", "check", "describe", "show", "text_problem"]


def describe(bound: Bound, unit: str = "") -> str:
    """The range in words: "from 0 to 1e+06 USD/h", "above 0 and at most 100 years"."""
    return f"{_low(bound)} and at most {bound.le:g}{f' {unit}' if unit else ''}"


def _low(bound: Bound) -> str:
    if bound.gt is not None:
        return f"above {bound.gt:g}"
    return "0 or more" if bound.ge == 0 else f"at least {bound.ge:g}"


def check(bound: Bound, value: float | None, option: str, unit: str = "") -> None:
    """Nothing when ``value`` is None or finite and within ``bound``; else a one-line
    :class:`~hwadvisor.errors.UsageError` naming ``option``, the limit it breaks and the
    value ("--years must be above 0, got -1", "... must be at most 100 years, got 1e+09")."""
    from hwadvisor.errors import UsageError

    if value is None:
        return
    if isinstance(value, float) and math.isnan(value):
        raise UsageError(f"{option} must be {_low(bound)}, got nan")
    if bound.le is not None and value > bound.le:
        unit = f" {unit}" if unit else ""
        raise UsageError(f"{option} must be at most {bound.le:g}{unit}, got {show(value)}")
    if not bound.admits(value):
        raise UsageError(f"{option} must be {_low(bound)}, got {show(value)}")


def _limit(low: float, high: float, *, above: bool = False) -> Bound:
    return Bound(gt=low, le=high) if above else Bound(ge=low, le=high)


BYTES = _limit(0, 1e16)
SIZE = _limit(0, 1e16, above=True)
GPUS = _limit(1, 100_000)
CORES = _limit(1, 100_000)
QUOTA_CORES = _limit(0, 100_000, above=True)
SOCKETS = _limit(1, 1024)
CLOCK_MHZ = _limit(0, 100_000, above=True)
CLOCK_GHZ = _limit(0, 100, above=True)
GFLOPS = _limit(0, 1e9)
TFLOPS = _limit(1e-6, 1e6)
WATTS = _limit(0, 100_000)
CELSIUS = _limit(-273.15, 1000)
PERCENT = _limit(0, 100)
LINK_GEN = _limit(1, 32)
LINKS = _limit(0, 1024)
UNITS = _limit(1, 1e6)
SECONDS = _limit(0, 1e8)
MILLISECONDS = _limit(0, 1e11)
RUNS = _limit(0, 1e9)
RATIO = _limit(0, 1e6)
LOAD = _limit(0, 1e6)
SHAPE_DIM = _limit(0, 1e12)
USD_PER_HOUR = _limit(0, 1e6)
USD = _limit(0, 1e10)
YEARS = _limit(0, 100, above=True)
USD_PER_KWH = _limit(0, 100)
LAYERS = _limit(1, 10_000)
VOCAB = _limit(1, 1e7)
CONTEXT = _limit(1, 1e8)
WIDTH = _limit(1, 1e7)
PARAMS = _limit(1, 1e15)
FLOPS_PER_SAMPLE = _limit(0, 1e21, above=True)
HEADS = _limit(1, 100_000)
KERNELS = _limit(0, 1e9)
FLEET_LIMIT = _limit(1, 1e6)
GIB = _limit(0, 1e16 / 2**30)
GPU_COUNT = _limit(0, 100_000)

#: The number columns of a price file (``--prices``: SkyPilot's, gpuhunt's and ours) and
#: their limits: an hourly price, a count of vCPUs or GPUs, memory in GiB.
PRICE_COLUMNS: dict[str, Bound] = {
    "Price": USD_PER_HOUR,
    "SpotPrice": USD_PER_HOUR,
    "price": USD_PER_HOUR,
    "vCPUs": CORES,
    "cpu": CORES,
    "AcceleratorCount": GPU_COUNT,
    "gpu_count": GPU_COUNT,
    "MemoryGiB": GIB,
    "memory": GIB,
    "gpu_memory": GIB,
}

#: Every limit by name, as the table above lists them (docs and tests read it).
LIMITS: dict[str, Bound] = {
    name: value for name, value in globals().items() if isinstance(value, Bound)
}


def show(value: object) -> str:
    """``value`` short enough for one line: a 5,000-digit integer as its digit count."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"a {math.floor(value.bit_length() * math.log10(2)) + 1}-digit number"
    if isinstance(value, float):
        return f"{value:g}"
    return repr(value)[:60]


def text_problem(data: object) -> str | None:
    """Where ``data`` (JSON values) holds a string that is not valid Unicode (a lone
    surrogate, as ``"\\ud800"`` in a JSON file decodes), as a dotted path; None if none.

    Checked at C speed first (encoding the whole document); only a document that fails
    is walked to name the field.
    """
    try:
        json.dumps(data, ensure_ascii=False, check_circular=False).encode("utf-8")
    except UnicodeEncodeError:
        return _bad_path(data, ())
    except (TypeError, ValueError, RecursionError):
        return None  # not JSON values: the model's own validation says what is wrong
    return None


def _bad_path(data: object, path: tuple[str, ...]) -> str | None:
    if isinstance(data, str):
        return None if _valid(data) else ".".join(path) or "(document)"
    if isinstance(data, dict):
        for key, value in data.items():
            here = (*path, str(key) if _valid(str(key)) else "(a key)")
            if not _valid(str(key)):
                return ".".join(here)
            found = _bad_path(value, here)
            if found is not None:
                return found
    if isinstance(data, list):
        for i, value in enumerate(data):
            found = _bad_path(value, (*path, str(i)))
            if found is not None:
                return found
    return None


def _valid(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
