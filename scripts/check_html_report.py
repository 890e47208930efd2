#!/usr/bin/env python3
"""Render the HTML reports in headless Chromium; fail on a console error or a missing chart.

Builds the three reports from recorded inputs, so nothing is measured or probed:

- ``recommend --html`` for the recorded EPYC KVM guest (``--facts``) with a recorded
  bench of the same kind of machine (``--bench-file``);
- ``estimate --html`` of resnet50 on four catalog GPUs (``--no-bench``);
- the bench page of that recorded bench (:func:`hwadvisor.render.html.bench_html`).

Each page is opened in Chromium (Debian's ``chromium``) driven through the DevTools
protocol over a pipe (``--remote-debugging-pipe``: no port, no websocket, no extra
package). The check fails when the page logs an error or a warning, throws, makes any
request other than the file itself, or when a chart container holds no ``<svg>`` once
vega-embed has finished. The advice page's full-height screenshot goes to
``docs/report-screenshot.png`` (``--screenshot``); ``--keep DIR`` keeps the pages and a
screenshot of each.

Usage: ``python scripts/check_html_report.py [--chromium PATH] [--screenshot FILE] [--keep DIR]
[PAGE.html ...]`` (pages given are checked instead of the three built ones).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FACTS = ROOT / "tests" / "data" / "reports" / "recorded-epyc-milan-kvm.json"
BENCH = ROOT / "tests" / "render" / "data" / "bench-epyc-kvm.json"
WIDTH = 1100
TIMEOUT_S = 60.0
#: A chart taller than this has a broken layout (a scale without a range grows to 2^25 px).
MAX_CHART_PX = 3000
#: The tallest screenshot taken (Chromium refuses far taller captures).
MAX_SHOT_PX = 12000
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)
#: In the page: each chart container and the SVG vega-embed drew in it.
CHARTS_JS = """JSON.stringify({
  state: document.body.dataset.charts || "",
  charts: Array.from(document.querySelectorAll(".vis"), function (el) {
    var svg = el.querySelector("svg");
    return {id: el.id, svg: !!svg, marks: svg ? svg.querySelectorAll("path, text, line").length : 0,
            height: Math.round(el.getBoundingClientRect().height)};
  })
})"""


class Failure(Exception):
    """The page did not render as it should."""


class DevTools:
    """Chromium with the DevTools protocol on fds 3 (commands in) and 4 (replies out)."""

    def __init__(self, chromium: str, profile: Path) -> None:
        cmd_r, self._cmd_w = os.pipe()
        self._res_r, res_w = os.pipe()

        def child_fds() -> None:
            # Above 10 first, so that moving them to 3 and 4 cannot clobber either.
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (cmd_r, res_w)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        args = [
            chromium,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={WIDTH},900",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child_fds,  # the child only moves two fds
            pass_fds=(3, 4),
        )
        os.close(cmd_r)
        os.close(res_w)
        self._next = 0
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buf = b""
        with os.fdopen(self._res_r, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                buf += chunk
                *messages, buf = buf.split(b"\0")
                for raw in messages:
                    self._inbox.put(json.loads(raw))
        self._inbox.put(None)

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its reply; events met meanwhile are kept."""
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            reply = self._get(deadline, method)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise Failure(f"{method}: {reply['error'].get('message')}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_event(self, method: str, session: str, since: int) -> None:
        """Wait for an event of ``session`` by name, counting those kept from ``since`` on."""

        def match(e: dict[str, Any]) -> bool:
            return e.get("method") == method and e.get("sessionId") == session

        if any(match(e) for e in self.events[since:]):
            return
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            event = self._get(deadline, method)
            self.events.append(event)
            if match(event):
                return

    def _get(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        try:
            item = self._inbox.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            raise Failure(f"no answer from Chromium for {waiting_for} in {TIMEOUT_S:g} s") from None
        if item is None:
            raise Failure(f"Chromium closed the pipe while waiting for {waiting_for}")
        return item

    def close(self) -> None:
        """Close the browser, then make sure no process of it is left."""
        with contextlib.suppress(Failure, OSError):
            self.call("Browser.close")
        with contextlib.suppress(OSError):
            os.close(self._cmd_w)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        reap_descendants()


def become_subreaper() -> None:
    """Adopt orphaned descendants (Linux), so Chromium's helpers come back to be reaped
    here instead of outliving this script under whoever started it."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def _children() -> list[int]:
    pids: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            pids += [int(p) for p in (task / "children").read_text().split()]
    return pids


def reap_descendants(within_s: float = 10.0) -> None:
    """Kill what is left of the processes this script started (Chromium's helpers, adopted
    as a subreaper) by their ids, and reap them."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        left = _children()
        if not left:
            return
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def problems(events: list[dict[str, Any]], page_url: str) -> list[str]:
    """Console errors and warnings, exceptions, and requests for anything but the page."""
    found = []
    for e in events:
        method, p = e.get("method"), e.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            text = " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", [])
            )
            found.append(f"console.{p['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = p.get("exceptionDetails", {})
            found.append(
                f"exception: {details.get('exception', {}).get('description') or details.get('text')}"
            )
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            entry = p["entry"]
            found.append(f"log {entry['level']} ({entry.get('source')}): {entry.get('text')}")
        elif method == "Network.requestWillBeSent":
            url = p.get("request", {}).get("url", "")
            if url != page_url and not url.startswith(("data:", "blob:", "about:")):
                found.append(f"request: {url}")
    return found


def chart_problems(state: dict[str, Any]) -> list[str]:
    """What is wrong with the charts once vega-embed is done: none, unfinished, no SVG
    drawn, or a layout gone wrong (a chart taller than :data:`MAX_CHART_PX`)."""
    charts = state.get("charts", [])
    if not charts:
        return ["no chart on the page"]
    found = []
    if state.get("state") != "rendered":
        found.append(f"the charts did not finish rendering (state {state.get('state')!r})")
    for c in charts:
        if not c["svg"] or c["marks"] < 5:
            found.append(f"chart {c['id']} has no SVG")
        elif c["height"] > MAX_CHART_PX:
            found.append(f"chart {c['id']} is {c['height']} px tall")
    return found


def screenshot(tools: DevTools, session: str, shot: Path) -> list[str]:
    """The whole page as a PNG in ``shot`` (at most :data:`MAX_SHOT_PX` tall)."""
    metrics = tools.call("Page.getLayoutMetrics", session)
    height = min(int(metrics["cssContentSize"]["height"]), MAX_SHOT_PX)
    clip = {"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1}
    try:
        image = tools.call(
            "Page.captureScreenshot", session, format="png", clip=clip, captureBeyondViewport=True
        )
    except Failure as exc:
        return [f"no screenshot: {exc}"]
    shot.parent.mkdir(parents=True, exist_ok=True)
    shot.write_bytes(base64.b64decode(image["data"]))
    return []


def render(tools: DevTools, page: Path, shot: Path | None) -> dict[str, Any]:
    """Open ``page`` in a new tab, wait for the charts, check them, screenshot if asked."""
    target = tools.call("Target.createTarget", url="about:blank")["targetId"]
    session = tools.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    for domain in ("Runtime", "Log", "Page", "Network"):
        tools.call(f"{domain}.enable", session)
    tools.call(
        "Emulation.setDeviceMetricsOverride",
        session,
        width=WIDTH,
        height=900,
        deviceScaleFactor=1,
        mobile=False,
    )
    start = len(tools.events)
    url = page.resolve().as_uri()
    tools.call("Page.navigate", session, url=url)
    tools.wait_event("Page.loadEventFired", session, start)
    state: dict[str, Any] = {}
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        value = tools.call("Runtime.evaluate", session, expression=CHARTS_JS, returnByValue=True)
        if "exceptionDetails" in value:
            raise Failure(f"{page.name}: {value['exceptionDetails'].get('text')}")
        state = json.loads(value["result"]["value"])
        if state["state"] in ("rendered", "failed") or not state["charts"]:
            break
        time.sleep(0.1)
    found = problems(
        [e for e in tools.events[start:] if e.get("sessionId") in (session, None)], url
    )
    found += chart_problems(state)
    if shot is not None:
        found += screenshot(tools, session, shot)
    tools.call("Target.closeTarget", targetId=target)
    return {"page": page.name, "charts": len(state.get("charts", [])), "problems": found}


def build_pages(folder: Path) -> list[Path]:
    """The advice, estimate and bench pages, from the recorded inputs only.

    Run from the repository root with relative paths, so the pages name the recorded
    files as the repository does (the screenshot shows no checkout path).
    """
    py = sys.executable
    advice, estimate, bench = (folder / f"{n}.html" for n in ("advice", "estimate", "bench"))
    facts, bench_file = str(FACTS.relative_to(ROOT)), str(BENCH.relative_to(ROOT))
    workload = ["--model", "resnet50"]
    devices = ["--on", "t4", "--on", "l4", "--on", "a100-80gb", "--on", "h100-sxm"]
    recommend = ["recommend", "--scenario", "training", *workload, "--facts", facts]
    runs = (
        [*recommend, "--bench-file", bench_file, "--html", str(advice)],
        ["estimate", *workload, *devices, "--no-bench", "--html", str(estimate)],
    )
    for args in runs:
        done = subprocess.run(
            [py, "-m", "hwadvisor", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            raise Failure(f"hwadvisor {args[0]} exited {done.returncode}: {done.stderr.strip()}")
    code = (
        "import sys; from pathlib import Path; from hwadvisor.models.bench import BenchReport;"
        "from hwadvisor.render.html import bench_html;"
        "doc = BenchReport.model_validate_json(Path(sys.argv[1]).read_text());"
        "Path(sys.argv[2]).write_text(bench_html(doc), encoding='utf-8')"
    )
    subprocess.run([py, "-c", code, str(BENCH), str(bench)], check=True, timeout=300)
    return [advice, estimate, bench]


@contextlib.contextmanager
def workdir(keep: Path | None) -> Iterator[Path]:
    """``keep`` (made), or a temporary folder removed afterwards."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="hwadvisor-html-") as tmp:
        yield Path(tmp)


def main(argv: list[str] | None = None) -> int:
    """Build, render and check the pages; 0 when every page is clean."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--screenshot", type=Path, default=ROOT / "docs" / "report-screenshot.png")
    parser.add_argument(
        "--keep", type=Path, default=None, help="keep the pages and their screenshots here"
    )
    parser.add_argument(
        "pages", nargs="*", type=Path, help="check these pages instead (the first is screenshot)"
    )
    args = parser.parse_args(argv)
    if not Path(args.chromium).exists():
        print(
            f"check_html_report: no Chromium at {args.chromium} (apt-get install chromium)",
            file=sys.stderr,
        )
        return 2
    failed = False
    become_subreaper()
    with workdir(args.keep) as folder:
        missing = [str(p) for p in args.pages if not p.is_file()]
        if missing:
            print(f"check_html_report: no such page: {', '.join(missing)}", file=sys.stderr)
            return 2
        try:
            pages = args.pages or build_pages(folder)
        except (Failure, subprocess.SubprocessError) as exc:
            print(f"check_html_report: {exc}", file=sys.stderr)
            return 1
        with tempfile.TemporaryDirectory(prefix="hwadvisor-chromium-") as profile:
            tools = DevTools(args.chromium, Path(profile))
            try:
                for page in pages:
                    shot = args.screenshot if page == pages[0] else None
                    if args.keep is not None and shot is None:
                        shot = folder / page.with_suffix(".png").name
                    result = render(tools, page, shot)
                    status = "ok" if not result["problems"] else "FAILED"
                    print(f"{result['page']}: {result['charts']} chart(s), {status}")
                    for line in result["problems"]:
                        print(f"  {line}")
                    failed |= bool(result["problems"])
            except Failure as exc:
                print(f"check_html_report: {exc}", file=sys.stderr)
                return 1
            finally:
                tools.close()
    print(f"screenshot: {args.screenshot}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
