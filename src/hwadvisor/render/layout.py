"""Tables and paragraphs that fit the terminal without cutting a value.

rich's own tables shrink every column to fit and cut what does not fit with "…", which
at 80 columns turns "✗ does not fit" into "✗ does…" and "28.6 GiB" into "28.6 G…".
:class:`FitTable` decides instead, from the width it is given:

- value columns (numbers with their units, verdict words) are never wrapped or cut;
- one name column wraps, at word boundaries, into the room left;
- columns of secondary detail (``fold``) move, least important first, into a dimmed line
  below their row when the row would not fit; ``wide`` columns show only at
  :data:`WIDE` columns and more;
- when even that does not fit (a very narrow terminal), each row becomes a block: the
  name, then one ``header: value`` line per column;
- a row may carry a ``note`` (a sentence, not a column): a dimmed line below it, wrapped
  like a folded detail.

:class:`Hanging` prints a paragraph whose wrapped lines start under its first word,
after a prefix such as a rule id or a bullet.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

#: From this width on, tables add the columns marked ``wide``.
WIDE = 120
#: Spaces between two columns.
GAP = 2
#: Indent of a folded detail line under its row.
FOLD_INDENT = 4


@dataclass(frozen=True)
class Col:
    """One column: how it is aligned and what may happen to it when room is short."""

    header: str
    justify: Literal["left", "right"] = "left"
    #: The column that wraps (one per table, usually the name).
    wrap: bool = False
    #: 0: always on the row. Higher numbers fold below the row first when it is too wide.
    fold: int = 0
    #: Shown only at :data:`WIDE` columns and more (in JSON always).
    wide: bool = False
    #: The narrowest the wrapping column may get.
    min_width: int = 10


def _text(cell: str | Text) -> Text:
    return cell.copy() if isinstance(cell, Text) else Text.from_markup(cell)


def _longest_word(text: Text) -> int:
    return max((len(w) for w in text.plain.split()), default=0)


def _one_line(text: Text) -> Text:
    """A cell of several lines as one line, its lines joined by commas."""
    return Text(", ").join(text.split("\n"))


def _width(text: Text) -> int:
    """The widest line of a cell (a cell may hold several lines)."""
    return max((line.cell_len for line in text.split("\n")), default=0)


@dataclass
class _Plan:
    inline: list[int]
    folded: list[int]
    widths: dict[int, int] = field(default_factory=dict)


class FitTable:
    """A table laid out for the width it is printed at (see the module's docstring)."""

    def __init__(
        self,
        columns: Sequence[Col],
        rows: Iterable[Sequence[str | Text]],
        *,
        title: str | None = None,
        hint: bool = False,
        notes: Sequence[str | Text | None] | None = None,
    ) -> None:
        self.columns = list(columns)
        #: Say below the table which ``wide`` columns a narrower terminal left out.
        self.hint = hint
        self.rows = [[_text(c) for c in row] for row in rows]
        self.title = title
        #: One dimmed sentence per row (None for none), printed below the row.
        self.notes = [None if n is None else _text(n) for n in notes or []]
        self.notes += [None] * (len(self.rows) - len(self.notes))
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"a row has {len(row)} cells for {len(self.columns)} columns")

    # Planning. ------------------------------------------------------------------------

    def _natural(self, i: int) -> int:
        cells = [_width(r[i]) for r in self.rows]
        return max([len(self.columns[i].header), *cells])

    def _least(self, i: int) -> int:
        """The narrowest column ``i`` can be: its natural width, or for the wrapping
        column its longest word (at least its ``min_width``)."""
        col = self.columns[i]
        if not col.wrap:
            return self._natural(i)
        words = [_longest_word(r[i]) for r in self.rows] + [len(col.header)]
        return min(self._natural(i), max(col.min_width, *words))

    def _needed(self, inline: list[int]) -> int:
        return sum(self._least(i) for i in inline) + GAP * (len(inline) - 1)

    def plan(self, width: int) -> _Plan | None:
        """Which columns stay on the row and how wide each is; None when no layout fits."""
        shown = [i for i, c in enumerate(self.columns) if not c.wide or width >= WIDE]
        inline = list(shown)
        folded: list[int] = []
        order = sorted(
            (i for i in shown if self.columns[i].fold), key=lambda i: (-self.columns[i].fold, -i)
        )
        for i in order:
            if self._needed(inline) <= width:
                break
            inline.remove(i)
            folded.append(i)
        if self._needed(inline) > width:
            return None
        widths = {i: self._least(i) for i in inline}
        spare = width - self._needed(inline)
        for i in inline:
            if self.columns[i].wrap:
                grown = min(self._natural(i), widths[i] + spare)
                spare -= grown - widths[i]
                widths[i] = grown
        return _Plan(inline, sorted(folded), widths)

    # Rendering. -----------------------------------------------------------------------

    def _cell_lines(self, console: Console, i: int, cell: Text, width: int) -> list[Text]:
        col = self.columns[i]
        lines: list[Text] = []
        for part in cell.split("\n"):
            lines += list(part.wrap(console, width)) if col.wrap else [part]
        for line in lines:
            line.align(col.justify, width)
        return lines or [Text(" " * width)]

    def _line(self, plan: _Plan, cells: dict[int, list[Text]], k: int) -> Text:
        out = Text()
        for n, i in enumerate(plan.inline):
            if n:
                out.append(" " * GAP)
            lines = cells[i]
            out.append_text(lines[k] if k < len(lines) else Text(" " * plan.widths[i]))
        out.rstrip()
        return out

    def _folded(self, console: Console, plan: _Plan, row: list[Text], width: int) -> list[Text]:
        parts = [(self.columns[i].header, row[i]) for i in plan.folded if row[i].plain.strip()]
        if not parts:
            return []
        body = Text(style="dim")
        for n, (header, cell) in enumerate(parts):
            body.append("; " if n else "")
            body.append(f"{header}: ")
            body.append_text(_one_line(cell))
        return list(Hanging(" " * FOLD_INDENT, body).lines(console, width))

    def _header(self, plan: _Plan) -> Text:
        out = Text(style="bold")
        for n, i in enumerate(plan.inline):
            cell = Text(self.columns[i].header)
            cell.align(self.columns[i].justify, plan.widths[i])
            out.append(" " * GAP if n else "")
            out.append_text(cell)
        out.rstrip()
        return out

    def lines(self, console: Console, width: int) -> list[Text]:
        """The table as lines of at most ``width`` cells."""
        out: list[Text] = []
        if self.title:
            out += Hanging("", Text.from_markup(self.title, style="bold")).lines(console, width)
        plan = self.plan(width)
        if plan is None:
            return out + self._stacked(console, width)
        out.append(self._header(plan))
        out.append(Text("─" * _table_width(plan), style="dim"))
        for row, note in zip(self.rows, self.notes, strict=True):
            cells = {i: self._cell_lines(console, i, row[i], plan.widths[i]) for i in plan.inline}
            height = max(len(v) for v in cells.values())
            out += [self._line(plan, cells, k) for k in range(height)]
            out += self._folded(console, plan, row, width)
            out += _note(console, note, " " * FOLD_INDENT, width)
        return out + self._hint(console, width)

    def _hint(self, console: Console, width: int) -> list[Text]:
        hidden = [c.header for c in self.columns if c.wide and width < WIDE]
        if not self.hint or not hidden:
            return []
        note = Text(f"{', '.join(hidden)}: at {WIDE} columns and more, or with --json", "dim")
        return Hanging("", note).lines(console, width)

    def _stacked(self, console: Console, width: int) -> list[Text]:
        """Each row as a block: its first cell, then ``header: value`` lines."""
        out: list[Text] = []
        for row, note in zip(self.rows, self.notes, strict=True):
            out += Hanging("", row[0].copy()).lines(console, width)
            for col, cell in zip(self.columns[1:], row[1:], strict=True):
                if not cell.plain.strip() or (col.wide and width < WIDE):
                    continue
                body = Text(f"{col.header}: ", style="dim")
                body.append_text(_one_line(cell))
                out += Hanging("  ", body).lines(console, width)
            out += _note(console, note, "  ", width)
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.lines(console, options.max_width)


def _note(console: Console, note: Text | None, prefix: str, width: int) -> list[Text]:
    """A row's note as dimmed lines after ``prefix`` (none without a note)."""
    if note is None or not note.plain.strip():
        return []
    body = note.copy()
    body.stylize("dim")
    return Hanging(prefix, body).lines(console, width)


def _table_width(plan: _Plan) -> int:
    """The width of the table's columns and the gaps between them."""
    return sum(plan.widths.values()) + GAP * (len(plan.inline) - 1)


class Hanging:
    """A paragraph after a prefix, its wrapped lines indented to where the text starts.

    ``indent`` (the continuation lines' indent) defaults to the prefix's width; text too
    long for the room left wraps at word boundaries (a single word longer than a line is
    folded, never cut).
    """

    def __init__(self, prefix: str | Text, body: str | Text, *, indent: int | None = None):
        self.prefix = _text(prefix)
        self.body = _text(body)
        self.indent = self.prefix.cell_len if indent is None else indent

    def lines(self, console: Console, width: int) -> list[Text]:
        """The paragraph as lines of at most ``width`` cells."""
        room = max(10, width - max(self.indent, self.prefix.cell_len))
        wrapped = self.body.wrap(console, room)
        out: list[Text] = []
        for k, line in enumerate(wrapped):
            head = self.prefix.copy() if k == 0 else Text(" " * self.indent)
            head.append_text(line)
            head.rstrip()
            out.append(head)
        return out or [self.prefix.copy()]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.lines(console, options.max_width)
