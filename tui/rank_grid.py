"""The rank x iteration grid of a torchrun job: ``dyngraph view run.rank0.dgtrace``.

One row per iteration, one column per rank; a cell holds that rank's loss and gradient
norm (after DDP's all-reduce where there was one), marked ✗ when its graph differs from
the other ranks' and ◆ where the ranks were found to diverge. The last two columns say
whether the ranks' graphs are the same and whether their gradients after the all-reduce
agree. The pane below describes the highlighted cell (the divergence in full, on its row).
Enter on a rank's cell opens that rank's trace in the debugger at that iteration (``q``
there comes back here).

The app returns the chosen (rank, iteration), or None on ``q``: ``cli.run_view`` opens it.
"""

from __future__ import annotations

import math

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static

from dyngraph.ranks.jobtrace import Cell, JobTrace
from dyngraph.textsafe import shown


def cell_text(cell: Cell | None, odd: bool) -> Text:
    """What a grid cell shows (pure: tests read it without an app)."""
    if cell is None:
        return Text("·", "dim")
    loss = "-" if cell.loss is None else f"{cell.loss:.4g}"
    text = Text(loss, "red" if cell.loss is not None and not math.isfinite(cell.loss) else "")
    if cell.grad_norm is not None:
        text.append(f"  |g| {cell.grad_norm:.3g}", "dim")
    if cell.divergence:
        text.append(" ◆", "bold red")
    elif odd:
        text.append(" ✗", "bold red")
    return text


class RankGridApp(App[tuple[int, int] | None]):
    """A job's ranks side by side; Enter opens one rank's graph."""

    BINDINGS = [
        Binding("q", "quit_grid", "quit", id="grid.quit"),
        Binding("enter", "open", "open this rank's graph", id="grid.open"),
    ]
    DEFAULT_CSS = """
    RankGridApp #title { height: 1; background: $boost; padding: 0 1; }
    RankGridApp #grid { height: 1fr; }
    RankGridApp #detail { height: auto; max-height: 12; border: round $accent;
                          padding: 0 1; }
    """

    def __init__(self, job: JobTrace, title: str = "") -> None:
        super().__init__()
        self.job = job
        self.sub_title = title
        self._rows: list[int] = []

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="title")
        yield DataTable(id="grid", cursor_type="cell", zebra_stripes=True)
        yield Static(id="detail")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("iter", key="iter")
        for r in self.job.ranks:
            table.add_column(f"rank {r.rank}", key=f"rank{r.rank}")
        table.add_column("graphs", key="graphs")
        table.add_column("grads after all-reduce", key="grads")
        self._rows = self.job.iterations
        table.add_rows([self._row(i) for i in self._rows])
        found = self.job.divergence
        if found is not None and found[0] in self._rows:
            odd = self.job.odd(found[0])
            rank = next((r.rank for r in self.job.ranks
                         if (c := r.cells.get(found[0])) is not None and c.divergence),
                        odd[0] if odd else 0)
            table.move_cursor(row=self._rows.index(found[0]), column=rank + 1)
        elif self._rows:
            table.move_cursor(row=0, column=1)
        table.focus()
        self._describe()

    def _title(self) -> Text:
        job = self.job
        text = Text.assemble((f" a job of {job.world_size} ranks ", "bold"),
                             (f" run {shown(job.files.run_id)}", "dim"))
        found = job.divergence
        if found is not None:
            text.append(f"  ◆ diverged at iteration {found[0]}", "bold red")
        elif any(job.odd(i) for i in job.iterations):
            text.append("  ✗ the ranks' graphs differ", "bold red")
        else:
            text.append("  the ranks agree", "green")
        return text

    def _row(self, iteration: int) -> list[Text | str]:
        job = self.job
        odd = job.odd(iteration)
        cells: list[Text | str] = [str(iteration)]
        cells += [cell_text(job.cell(r.rank, iteration), r.rank in odd) for r in job.ranks]
        if odd:
            cells.append(Text(f"ranks {', '.join(map(str, odd))} differ", "red"))
        elif all((c := job.cell(r.rank, iteration)) is not None and c.complete
                 for r in job.ranks):
            cells.append(Text("same", "green"))
        else:
            cells.append(Text("-", "dim"))
        agree, _ = job.gradients(iteration)
        cells.append(Text("-", "dim") if agree is None else Text("agree", "green") if agree
                     else Text("differ", "red"))
        return cells

    def _chosen(self) -> tuple[int, int] | None:
        """(rank, iteration) under the cursor, if it is on a rank's cell."""
        table = self.query_one(DataTable)
        row, column = table.cursor_coordinate
        if not self._rows or not 1 <= column <= self.job.world_size:
            return None
        return column - 1, self._rows[row]

    def _describe(self) -> None:
        detail = self.query_one("#detail", Static)
        chosen = self._chosen()
        if chosen is None:
            detail.update(Text("move onto a rank's cell; Enter opens its graph", "dim"))
            return
        rank, iteration = chosen
        job = self.job
        c = job.cell(rank, iteration)
        text = Text(f"rank {rank}, iteration {iteration}: ", "bold")
        if c is None:
            problem = job.ranks[rank].problem
            text.append(shown(problem) if problem else "no events of this iteration")
            detail.update(text)
            return
        loss = "-" if c.loss is None else f"{c.loss:.6g}"
        text.append(f"loss {loss}, {c.ops:,} ops, {c.collectives} collectives")
        if c.reduced_norm is not None:
            text.append(f", gradient norm {c.reduced_norm:.6g} after the all-reduce "
                        f"({c.local_norm or 0:.6g} on this rank before)")
        elif c.local_norm is not None:
            text.append(f", gradient norm {c.local_norm:.6g}")
        text.append(f", structure {c.key[:8] or '(unfinished)'}")
        if rank in job.odd(iteration):
            text.append("\nits graph differs from the other ranks'", "red")
        agree, why = job.gradients(iteration)
        if agree is False:
            text.append(f"\nthe gradients after the all-reduce differ: {shown(why)}", "red")
        found = job.divergence
        if found is not None and found[0] == iteration:
            text.append(f"\n◆ {shown(found[1])}", "red")
        detail.update(text)

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        self._describe()

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        self.action_open()

    def action_open(self) -> None:
        chosen = self._chosen()
        if chosen is None or self.job.ranks[chosen[0]].path is None:
            self.bell()
            return
        self.exit(chosen)

    def action_quit_grid(self) -> None:
        self.exit(None)
