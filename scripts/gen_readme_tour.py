"""Rewrite the example outputs of README.md's "A short tour" from the CLI itself.

Each ```text block of the tour that starts with ``$ hwadvisor ...`` holds a command and
what it printed at 80 columns. The commands that read saved inputs (``--facts`` files,
recorded reports, the catalog, the rules) are rerun here and their blocks rewritten, so
the tour shows what the program prints now; ``check`` describes the machine it runs on
and is left as it was written. A test (``tests/cli/test_readme_tour.py``) fails when a
block is out of date: run ``python scripts/gen_readme_tour.py`` after changing a view.
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
WIDTH = 80
_BLOCK = re.compile(r"```text\n\$ (hwadvisor [^\n]*)\n(.*?)```", re.DOTALL)


def tour(text: str) -> tuple[int, int]:
    """Where the tour section starts and ends in the README's text."""
    start = text.index("## A short tour")
    nxt = text.find("\n## ", start + 1)
    return start, len(text) if nxt < 0 else nxt


def commands(text: str) -> list[tuple[str, str]]:
    """The tour's (command, shown output) pairs, in order."""
    start, end = tour(text)
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(text, start, end)]


def replayable(command: str) -> bool:
    """Whether the command reads only saved inputs (``check`` probes this machine)."""
    return not command.startswith("hwadvisor check")


def argv(command: str) -> list[str]:
    """The command's arguments as a shell would pass them (globs expanded from the root)."""
    out: list[str] = []
    for word in shlex.split(command)[1:]:
        matches = sorted(glob.glob(str(ROOT / word))) if any(c in word for c in "*?[") else []
        out += [str(Path(m).relative_to(ROOT)) for m in matches] or [word]
    return out


@contextlib.contextmanager
def _terminal(width: int) -> Iterator[None]:
    """A report console ``width`` columns wide, in the checkout's root."""
    from hwadvisor.render import stdout_console

    old_cwd, old_columns = os.getcwd(), os.environ.get("COLUMNS")
    os.chdir(ROOT)
    os.environ["COLUMNS"] = str(width)
    stdout_console.cache_clear()
    try:
        yield
    finally:
        os.chdir(old_cwd)
        if old_columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old_columns
        stdout_console.cache_clear()


def run(command: str, width: int = WIDTH) -> str:
    """What ``command`` prints on stdout at ``width`` columns (its stderr is dropped)."""
    from hwadvisor.cli import main

    out = io.StringIO()
    with (
        _terminal(width),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        main(argv(command))
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def render(text: str) -> str:
    """The README with every replayable tour block rewritten from a fresh run."""
    start, end = tour(text)

    def fresh(m: re.Match[str]) -> str:
        command = m.group(1)
        shown = run(command) if replayable(command) else m.group(2)
        return f"```text\n$ {command}\n{shown}```"

    return text[:start] + _BLOCK.sub(fresh, text[start:end]) + text[end:]


def main() -> None:
    """Rewrite README.md, or with --check exit 1 when a tour block is out of date."""
    text = README.read_text(encoding="utf-8")
    new = render(text)
    if "--check" in sys.argv:
        sys.exit(0 if new == text else 1)
    README.write_text(new, encoding="utf-8")
    print(f"wrote {README}")


if __name__ == "__main__":
    main()
