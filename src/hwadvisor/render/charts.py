"""The Vega-Lite specs of the HTML report, built with altair from plain rows (pure).

:mod:`hwadvisor.render.html` turns the documents into the rows defined here and places
the specs in its page. Each function returns the Vega-Lite spec as a dict (altair
validates it against the schema): time per option, cost per option, memory against
capacity per device, and a roofline of one device's bench figures.

altair and vl-convert-python are the optional extra ``report``; :func:`require` names
the install command when either is missing.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hwadvisor.errors import MissingDependencyError

INSTALL_HINT = "pip install 'hwadvisor[report]'"
FONT = "system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', sans-serif"
#: Status of an option -> colour (the legend keeps this order).
STATUS_COLOURS = {
    "meets the deadline": "#2f9e44",
    "misses the deadline": "#e8590c",
    "meets the latency target": "#2f9e44",
    "misses the latency target": "#e8590c",
    "does not fit in memory": "#c92a2a",
    "no deadline": "#1c7ed6",
    "fits": "#2f9e44",
    "does not fit": "#c92a2a",
    "fit unknown": "#868e96",
}
DTYPE_COLOURS = {
    "fp32": "#1c7ed6",
    "tf32": "#7048e8",
    "bf16": "#2f9e44",
    "fp16": "#f08c00",
    "int8": "#c2255c",
}
#: Nice durations for a log time axis: seconds -> label.
TIME_TICKS = {
    1e-3: "1 ms",
    1e-2: "10 ms",
    0.1: "100 ms",
    1.0: "1 s",
    10.0: "10 s",
    60.0: "1 min",
    600.0: "10 min",
    3600.0: "1 h",
    86400.0: "1 day",
    604800.0: "1 week",
    2592000.0: "30 days",
    31536000.0: "1 year",
}
BAR_STEP = 30
#: One marker per kernel on every roofline, so the legend reads the same on each.
KERNEL_SHAPES = {"matmul": "square", "conv2d": "circle", "triad": "triangle-up"}
#: The fields of an option each chart carries (the time chart no dollars, and so on).
TIME_FIELDS = ("label", "seconds", "time_text", "status")
COST_FIELDS = ("label", "usd", "spot_usd", "cost_text", "cost_label", "status")


def require() -> tuple[Any, Any]:
    """altair and vl_convert, or :class:`MissingDependencyError` naming the install."""
    try:
        return importlib.import_module("altair"), importlib.import_module("vl_convert")
    except ImportError as exc:
        raise MissingDependencyError(
            f"the HTML report needs altair and vl-convert-python ({exc.name or exc} is "
            f"missing): {INSTALL_HINT}"
        ) from exc


@dataclass(frozen=True)
class OptionRow:
    """One way to run the workload: its time, cost and whether it fits."""

    label: str
    seconds: float | None
    time_text: str
    status: str
    usd: float | None = None
    spot_usd: float | None = None
    cost_text: str = ""
    cost_label: str = ""


@dataclass(frozen=True)
class MemoryRow:
    """The job's memory on one device against the device's capacity."""

    label: str
    used_gib: float
    capacity_gib: float | None
    status: str
    text: str
    lower_gib: float | None = None
    upper_gib: float | None = None


@dataclass(frozen=True)
class RoofPoint:
    """One measured figure placed on the roofline: FLOP per byte and FLOP/s reached."""

    label: str
    kernel: str
    dtype: str
    intensity: float
    flops: float
    text: str


@dataclass(frozen=True)
class Roof:
    """The ceiling of one dtype: min(compute peak, bandwidth x intensity)."""

    dtype: str
    peak_flops: float
    bandwidth_bytes_s: float
    label: str
    measured: bool
    bandwidth_label: str = ""
    bandwidth_measured: bool = True


def _config(chart: Any) -> Any:
    return (
        chart.configure(font=FONT)
        .configure_view(stroke=None)
        .configure_axis(labelFontSize=12, titleFontSize=12, gridColor="#e9ecef")
        .configure_legend(labelFontSize=12, titleFontSize=12, orient="bottom")
    )


def to_spec(chart: Any) -> dict[str, Any]:
    """The chart's Vega-Lite spec as a dict, sized to its container, in the page's style."""
    sized = chart.properties(autosize={"type": "fit-x", "contains": "padding"})
    spec: dict[str, Any] = _config(sized).to_dict()
    spec.pop("$schema", None)  # a URL; the page never fetches it
    return spec


def _colour(alt: Any, statuses: Sequence[str]) -> Any:
    """Colour by status, in the legend order of STATUS_COLOURS (grey for any other)."""
    used = [s for s in STATUS_COLOURS if s in statuses]
    used += sorted({s for s in statuses if s not in STATUS_COLOURS})
    scale = alt.Scale(domain=used, range=[STATUS_COLOURS.get(s, "#868e96") for s in used])
    return alt.Color("status:N", scale=scale, title=None)


def _log_domain(values: Sequence[float], *, pad_low: float, pad_high: float) -> list[float]:
    low, high = min(values), max(values)
    return [
        10 ** math.floor(math.log10(low / pad_low)),
        10 ** math.ceil(math.log10(high * pad_high)),
    ]


def time_chart(
    rows: Sequence[OptionRow], *, title: str, limit_s: float | None, limit_text: str
) -> dict[str, Any]:
    """Horizontal bars of time per option on a log axis, with the deadline as a rule."""
    alt, _ = require()
    known = [r for r in rows if r.seconds is not None and r.seconds > 0]
    values = [r.seconds for r in known if r.seconds is not None]
    values += [limit_s] if limit_s else []
    domain = _log_domain(values, pad_low=3, pad_high=40)
    ticks = [t for t in TIME_TICKS if domain[0] <= t <= domain[1]]
    label_expr = " : ".join(f"datum.value == {t!r} ? {TIME_TICKS[t]!r}" for t in ticks) + " : ''"
    data = alt.Data(values=[_row(r, TIME_FIELDS) for r in known])
    x = alt.X(
        "seconds:Q",
        scale=alt.Scale(type="log", domain=domain),
        axis=alt.Axis(values=ticks, labelExpr=label_expr, title=title),
    )
    y = alt.Y("label:N", sort=None, title=None, axis=alt.Axis(labelLimit=260))
    tooltip = [
        alt.Tooltip("label:N", title="option"),
        alt.Tooltip("time_text:N", title="time"),
        alt.Tooltip("status:N"),
    ]
    base = alt.Chart().encode(x=x, y=y)
    bars = base.mark_bar(cornerRadiusEnd=3, height={"band": 0.7}).encode(
        x2=alt.datum(domain[0]), color=_colour(alt, [r.status for r in known]), tooltip=tooltip
    )
    text = base.mark_text(align="left", dx=5, fontSize=12).encode(text="time_text:N")
    layers = [alt.layer(bars, text, data=data)]  # one copy of the rows for both
    if limit_s:
        rule = alt.Chart(alt.Data(values=[{"limit": limit_s, "text": limit_text}]))
        layers.append(rule.mark_rule(strokeDash=[6, 4], color="#495057").encode(x="limit:Q"))
        layers.append(
            rule.mark_text(align="left", dx=4, baseline="top", y=0, color="#495057").encode(
                x="limit:Q", text="text:N"
            )
        )
    chart = alt.layer(*layers).properties(width="container", height=BAR_STEP * len(known))
    return to_spec(chart)


def cost_chart(rows: Sequence[OptionRow]) -> dict[str, Any]:
    """Bars of the on-demand dollars per option, spot as a tick where priced."""
    alt, _ = require()
    priced = [r for r in rows if r.usd is not None]
    high = max([r.usd or 0.0 for r in priced] + [r.spot_usd or 0.0 for r in priced])
    x = alt.X(
        "usd:Q",
        title="on-demand cost of the job (US$)",
        scale=alt.Scale(domain=[0, high * 1.6 or 1], nice=False),
        axis=alt.Axis(format="$,.2~f", tickCount=6),
    )
    y = alt.Y("label:N", sort=None, title=None, axis=alt.Axis(labelLimit=260))
    base = alt.Chart(alt.Data(values=[_row(r, COST_FIELDS) for r in priced])).encode(y=y)
    tooltip = [alt.Tooltip("label:N", title="option"), alt.Tooltip("cost_text:N", title="cost")]
    bars = base.mark_bar(cornerRadiusEnd=3, height={"band": 0.7}).encode(
        x=x, color=_colour(alt, [r.status for r in priced]), tooltip=tooltip
    )
    text = base.mark_text(align="left", dx=5, fontSize=12).encode(x="usd:Q", text="cost_label:N")
    layers = [bars, text]
    if any(r.spot_usd is not None for r in priced):
        spot = base.transform_filter("datum.spot_usd != null").mark_tick(
            thickness=3, color="#212529"
        )
        layers.append(
            spot.encode(
                x="spot_usd:Q", tooltip=[alt.Tooltip("spot_usd:Q", title="spot US$", format=",.2f")]
            )
        )
    return to_spec(alt.layer(*layers).properties(width="container", height=BAR_STEP * len(priced)))


def memory_chart(rows: Sequence[MemoryRow]) -> dict[str, Any]:
    """Bars of the job's memory per device, the capacity as a black tick, bounds as a rule."""
    alt, _ = require()
    data = [
        _row(r) | {"end": max(r.used_gib, r.capacity_gib or 0.0, r.upper_gib or 0.0)} for r in rows
    ]
    high = max(d["end"] for d in data) or 1.0
    x = alt.X("used_gib:Q", title="memory (GiB)", scale=alt.Scale(domain=[0, high * 1.6]))
    y = alt.Y("label:N", sort=None, title=None, axis=alt.Axis(labelLimit=260))
    base = alt.Chart(alt.Data(values=data)).encode(y=y)
    tooltip = [
        alt.Tooltip("label:N", title="device"),
        alt.Tooltip("text:N", title="memory"),
        alt.Tooltip("status:N", title="fit"),
    ]
    bars = base.mark_bar(cornerRadiusEnd=3, height={"band": 0.6}).encode(
        x=x, color=_colour(alt, [r.status for r in rows]), tooltip=tooltip
    )
    layers = [bars]
    if any(r.lower_gib is not None and r.upper_gib is not None for r in rows):
        bounds = base.transform_filter("datum.lower_gib != null && datum.upper_gib != null")
        layers.append(
            bounds.mark_rule(strokeWidth=2, color="#212529").encode(
                x="lower_gib:Q", x2="upper_gib:Q"
            )
        )
    capacity = base.transform_filter("datum.capacity_gib != null").mark_tick(
        thickness=3, color="#212529", size=BAR_STEP - 4
    )
    layers.append(capacity.encode(x="capacity_gib:Q", tooltip=tooltip))
    layers.append(base.mark_text(align="left", dx=6, fontSize=12).encode(x="end:Q", text="text:N"))
    return to_spec(alt.layer(*layers).properties(width="container", height=BAR_STEP * len(rows)))


def _decades(domain: Sequence[float]) -> list[float]:
    low, high = (round(math.log10(v)) for v in domain)
    return [10.0**k for k in range(low, high + 1)]


def _roof_segments(roofs: Sequence[Roof], x_domain: Sequence[float]) -> list[dict[str, Any]]:
    """The flat compute part of each roof, from its ridge to the right edge."""
    out: list[dict[str, Any]] = []
    low, high = x_domain
    for roof in roofs:
        ridge = min(max(roof.peak_flops / roof.bandwidth_bytes_s, low), high)
        kind = "measured" if roof.measured else "peak"
        for i, x in enumerate((ridge, high)):
            out.append(
                {
                    "dtype": roof.dtype,
                    "x": x,
                    "y": roof.peak_flops,
                    "order": i,
                    "label": roof.label,
                    "kind": kind,
                }
            )
    return out


def _roof_labels(roofs: Sequence[Roof], right: float) -> list[dict[str, Any]]:
    """One label per ceiling height at the right edge: dtypes of equal peak share it
    ('bf16, fp16 989.4 TFLOP/s peak'), coloured as the first of them."""
    groups: dict[float, list[Roof]] = {}
    for roof in roofs:
        groups.setdefault(roof.peak_flops, []).append(roof)
    out = []
    for peak, same in groups.items():
        rest = same[0].label.partition(" ")[2]
        text = ", ".join(r.dtype for r in same) + " " + rest
        out.append({"dtype": same[0].dtype, "x": right, "y": peak, "label": text})
    return out


def _slope(roofs: Sequence[Roof], x_domain: Sequence[float]) -> list[dict[str, Any]]:
    """The memory-bound slope, shared by every dtype, up to the highest ridge."""
    bandwidth = roofs[0].bandwidth_bytes_s
    top = max(r.peak_flops for r in roofs)
    ridge = min(max(top / bandwidth, x_domain[0]), x_domain[1])
    kind = "measured" if roofs[0].bandwidth_measured else "peak"
    label = roofs[0].bandwidth_label
    return [
        {"x": x, "y": bandwidth * x, "order": i, "label": label, "kind": kind}
        for i, x in enumerate((x_domain[0], ridge))
    ]


def roofline_chart(points: Sequence[RoofPoint], roofs: Sequence[Roof]) -> dict[str, Any]:
    """Measured figures as points under the ceilings of each dtype (log-log)."""
    alt, _ = require()
    xs = [p.intensity for p in points] + [r.peak_flops / r.bandwidth_bytes_s for r in roofs]
    ys = [p.flops for p in points] + [r.peak_flops for r in roofs]
    x_domain = _log_domain(xs, pad_low=3, pad_high=30)  # room for the labels, right
    y_domain = _log_domain(ys, pad_low=3, pad_high=3)
    dtypes = sorted({p.dtype for p in points} | {r.dtype for r in roofs}, key=_dtype_order)
    dtype_scale = alt.Scale(domain=dtypes, range=[DTYPE_COLOURS.get(d, "#495057") for d in dtypes])
    colour = alt.Color("dtype:N", scale=dtype_scale, title="dtype")
    x = alt.X(
        "x:Q",
        scale=alt.Scale(type="log", domain=x_domain),
        axis=alt.Axis(
            title="arithmetic intensity (FLOP per byte moved)",
            format="~g",
            values=_decades(x_domain),
        ),
    )
    y = alt.Y(
        "y:Q",
        scale=alt.Scale(type="log", domain=y_domain),
        axis=alt.Axis(title="FLOP/s (OP/s for int8)", format="~s", values=_decades(y_domain)),
    )
    dash = alt.StrokeDash(
        "kind:N",
        scale=alt.Scale(domain=["peak", "measured"], range=[[1, 0], [6, 4]]),
        title="ceiling",
    )
    tip = [alt.Tooltip("label:N", title="ceiling")]
    flat = alt.Chart(alt.Data(values=_roof_segments(roofs, x_domain))).mark_line(
        strokeWidth=2, clip=True
    )
    roof_lines = flat.encode(
        x=x, y=y, color=colour, detail="dtype:N", order="order:Q", strokeDash=dash, tooltip=tip
    )
    slope = alt.Chart(alt.Data(values=_slope(roofs, x_domain))).mark_line(
        strokeWidth=2, clip=True, color="#495057"
    )
    slope_line = slope.encode(x="x:Q", y="y:Q", order="order:Q", strokeDash=dash, tooltip=tip)
    labels = _roof_labels(roofs, x_domain[1])
    kernels = [k for k in KERNEL_SHAPES if any(p.kernel == k for p in points)]
    roof_text = (
        alt.Chart(alt.Data(values=labels))
        .mark_text(align="right", dy=-7, fontSize=11)
        .encode(x="x:Q", y="y:Q", text="label:N", color=colour)
    )
    # Top left: above the memory slope, where no measured point can be.
    slope_label = [{"x": x_domain[0], "y": y_domain[1], "label": roofs[0].bandwidth_label}]
    slope_text = (
        alt.Chart(alt.Data(values=slope_label))
        .mark_text(align="left", baseline="top", dx=8, dy=6, fontSize=11, color="#495057")
        .encode(x="x:Q", y="y:Q", text="label:N")
    )
    dots = (
        alt.Chart(alt.Data(values=[_row(p) for p in points]))
        .mark_point(size=90, filled=True, opacity=0.9)
        .encode(
            x=alt.X("intensity:Q"),
            y=alt.Y("flops:Q"),
            color=colour,
            shape=alt.Shape(
                "kernel:N",
                title="kernel",
                scale=alt.Scale(domain=kernels, range=[KERNEL_SHAPES[k] for k in kernels]),
            ),
            tooltip=[
                alt.Tooltip("label:N", title="figure"),
                alt.Tooltip("text:N", title="measured"),
            ],
        )
    )
    chart = alt.layer(slope_line, roof_lines, roof_text, slope_text, dots).properties(
        width="container", height=380
    )
    return to_spec(chart)


def _dtype_order(dtype: str) -> int:
    order = list(DTYPE_COLOURS)
    return order.index(dtype) if dtype in order else len(order)


def _row(row: object, fields: Sequence[str] | None = None) -> dict[str, Any]:
    values = dict(vars(row))
    return values if fields is None else {f: values[f] for f in fields}
