"""The Vega-Lite specs of the report's language-model charts, built with altair (pure).

:func:`memory_parts_chart` stacks one fine-tuning job's memory per GPU by part, with
the GPU's capacity as a black tick. :func:`curve_chart` draws a continuous-batching
curve: aggregate tokens/s (left axis) and time to first token (right axis) over the
number of requests in flight, points past the memory limit hollow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hwadvisor.render.charts import BAR_STEP, require, to_spec
from hwadvisor.render.report_llm import GIB, PARTS
from hwadvisor.units import duration, human_bytes

if TYPE_CHECKING:
    from hwadvisor.render.report_llm import CurvePointRow, FinetuneRow

PART_COLOURS = (
    "#1c7ed6",
    "#74c0fc",
    "#7048e8",
    "#e8590c",
    "#2f9e44",
    "#94d82d",
    "#f08c00",
    "#868e96",
)
TOKENS_COLOUR = "#1c7ed6"
TTFT_COLOUR = "#e8590c"


def memory_parts_chart(rows: Sequence[tuple[FinetuneRow, dict[str, int]]]) -> dict[str, Any]:
    """Stacked bars of each device's memory per GPU by part; its capacity as a tick."""
    alt, _ = require()
    labels = [r.label for r, _ in rows]
    values = [
        {
            "label": r.label,
            "part": part,
            "order": PARTS.index(part),
            "gib": size / GIB,
            "text": f"{part}: {human_bytes(size)}",
        }
        for r, parts in rows
        for part, size in parts.items()
    ]
    used = [p for p in PARTS if any(v["part"] == p for v in values)]
    colour = alt.Color(
        "part:N",
        title=None,
        scale=alt.Scale(domain=used, range=[PART_COLOURS[PARTS.index(p)] for p in used]),
        sort=used,
    )
    y = alt.Y("label:N", sort=labels, title=None, axis=alt.Axis(labelLimit=260))
    bars = (
        alt.Chart(alt.Data(values=values))
        .mark_bar(height={"band": 0.6})
        .encode(
            x=alt.X("sum(gib):Q", title="memory per GPU (GiB)", stack="zero"),
            y=y,
            color=colour,
            order=alt.Order("order:Q"),
            tooltip=[alt.Tooltip("label:N", title="device"), alt.Tooltip("text:N", title="part")],
        )
    )
    capacity = [
        {"label": r.label, "capacity_gib": r.capacity / GIB, "text": human_bytes(r.capacity)}
        for r, _ in rows
        if r.capacity
    ]
    layers = [bars]
    if capacity:
        ticks = (
            alt.Chart(alt.Data(values=capacity))
            .mark_tick(thickness=3, color="#212529", size=BAR_STEP - 4)
            .encode(
                x="capacity_gib:Q",
                y=y,
                tooltip=[
                    alt.Tooltip("label:N", title="device"),
                    alt.Tooltip("text:N", title="capacity"),
                ],
            )
        )
        layers.append(ticks)
    chart = alt.layer(*layers).properties(width="container", height=BAR_STEP * len(rows) + 10)
    return to_spec(chart)


def curve_chart(points: Sequence[CurvePointRow]) -> dict[str, Any]:
    """Aggregate tokens/s and TTFT over concurrency (log 2), one axis each."""
    alt, _ = require()
    values = [
        {
            "concurrency": p.concurrency,
            "tokens_s": p.tokens_s,
            "ttft_ms": p.ttft_s * 1000,
            "fits": "fits" if p.fits is not False else "does not fit",
            "text": f"{p.tokens_s:,.0f} tokens/s, TTFT {duration(p.ttft_s)}"
            + (f", ITL {duration(p.itl_s)}" if p.itl_s is not None else "")
            + (f", {p.requests_s:.3g} requests/s" if p.requests_s is not None else ""),
        }
        for p in points
    ]
    x = alt.X(
        "concurrency:Q",
        scale=alt.Scale(type="log", base=2),
        axis=alt.Axis(title="requests in flight (concurrency)", format="~d"),
    )
    tip = [alt.Tooltip("concurrency:Q"), alt.Tooltip("text:N", title="at this concurrency")]
    base = alt.Chart(alt.Data(values=values)).encode(x=x)
    filled = alt.FillOpacity(
        "fits:O",
        sort=["fits", "does not fit"],
        scale=alt.Scale(domain=["fits", "does not fit"], range=[1, 0]),
        legend=alt.Legend(title="the KV cache of that many sequences"),
    )
    tokens = base.encode(
        y=alt.Y("tokens_s:Q", axis=alt.Axis(title="aggregate tokens/s", titleColor=TOKENS_COLOUR))
    )
    ttft = base.encode(
        y=alt.Y(
            "ttft_ms:Q", axis=alt.Axis(title="time to first token (ms)", titleColor=TTFT_COLOUR)
        )
    )
    left = alt.layer(
        tokens.mark_line(color=TOKENS_COLOUR),
        tokens.mark_point(color=TOKENS_COLOUR, size=60, filled=True).encode(
            fillOpacity=filled, tooltip=tip
        ),
    )
    right = alt.layer(
        ttft.mark_line(color=TTFT_COLOUR, strokeDash=[6, 4]),
        ttft.mark_point(color=TTFT_COLOUR, size=60, shape="diamond", filled=True).encode(
            fillOpacity=filled, tooltip=tip
        ),
    )
    chart = (
        alt.layer(left, right)
        .resolve_scale(y="independent")
        .properties(width="container", height=260)
    )
    return to_spec(chart)
