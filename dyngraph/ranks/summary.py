"""``dyngraph summary`` of a job: one table with a row per iteration and a column per rank.

Each cell holds that rank's loss; a cell whose graph differs from the other ranks' is
marked (and the row says which ranks), the row ends with whether the gradients after
DDP's all-reduce agree across ranks. Below: the divergence, if the ranks were found to
diverge, and each rank's end.
"""

from __future__ import annotations

import math

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..textsafe import shown
from .jobtrace import JobTrace

MAX_ROWS = 40


def print_job(job: JobTrace, console: Console) -> None:
    ranks = job.ranks
    console.print(Text.assemble(
        (f"a job of {job.world_size} ranks", "bold"), (f"  run {shown(job.files.run_id)}", "dim")))
    console.print(_table(job))
    for line in _footer(job):
        console.print(line)
    for r in ranks:
        if r.problem:
            console.print(Text(f"rank {r.rank}: {shown(r.problem)}", "yellow"))
        else:
            end = (f"exit status {r.status} ({shown(r.reason)})" if r.ended
                   else "no end: the recording was cut short")
            console.print(f"rank {r.rank}: {shown(r.path or '')}, {r.events:,} events, "
                          f"{sum(c.collectives for c in r.cells.values()):,} collectives, {end}")
    for path in job.files.left_out:
        console.print(Text(f"left out: {shown(path)} (another run's trace)", "dim"))


def _table(job: JobTrace) -> Table:
    table = Table(title="iterations x ranks (loss; ✗: a graph unlike the other ranks')",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  collapse_padding=True)
    table.add_column("iter", justify="right", no_wrap=True)
    for r in job.ranks:
        table.add_column(f"rank {r.rank}", justify="right", no_wrap=True)
    table.add_column("graphs", no_wrap=True)
    table.add_column("grads after all-reduce", no_wrap=True)
    iterations = job.iterations
    rows: list[int | None] = list(iterations)
    if len(rows) > MAX_ROWS:
        rows = [*iterations[: MAX_ROWS // 2], None, *iterations[-MAX_ROWS // 2:]]
    for i in rows:
        if i is None:
            table.add_row("…", *[""] * (len(job.ranks) + 2))
            continue
        odd = job.odd(i)
        cells = [_cell(job, r.rank, i, odd) for r in job.ranks]
        graphs = Text("same", "green") if not odd else Text(
            f"ranks {', '.join(map(str, odd))} differ", "red")
        if not odd and any((c := job.cell(r.rank, i)) is None or not c.complete
                           for r in job.ranks):
            graphs = Text("-", "dim")  # (a rank did not finish it: nothing to compare)
        agree, _ = job.gradients(i)
        grads = Text("-") if agree is None else Text("agree", "green") if agree else Text(
            "differ", "red")
        table.add_row(str(i), *cells, graphs, grads)
    return table


def _cell(job: JobTrace, rank: int, iteration: int, odd: list[int]) -> Text:
    c = job.cell(rank, iteration)
    if c is None:
        return Text("·", "dim")
    loss = "-" if c.loss is None else f"{c.loss:.5g}"
    text = Text(loss, "red" if c.loss is not None and not math.isfinite(c.loss) else "")
    if c.divergence:
        text.append(" ◆", "bold red")
    elif rank in odd:
        text.append(" ✗", "red")
    return text


def _footer(job: JobTrace) -> list[Text | str]:
    lines: list[Text | str] = []
    found = job.divergence
    if found is not None:
        lines.append(Text(f"◆ iteration {found[0]}: {shown(found[1])}", "red"))
    odd = [i for i in job.iterations if job.odd(i)]
    if odd:
        lines.append(Text(f"the ranks' iterations differ in {len(odd)} iteration(s), first in "
                          f"iteration {odd[0]} (shapes of one rank's and what one rank ran "
                          f"alone count here; while the job ran, what can hang it was "
                          f"compared)", "yellow"))
    elif found is None:
        lines.append("every iteration has the same graph on every rank")
    checked = [(i, job.gradients(i)) for i in job.iterations]
    known = [(i, g) for i, g in checked if g[0] is not None]
    bad = [(i, g) for i, g in known if not g[0]]
    if bad:
        i, (_, why) = bad[0]
        lines.append(Text(f"the gradients after DDP's all-reduce differ across ranks in "
                          f"{len(bad)} iteration(s), first in iteration {i}: {shown(why)}",
                          "red"))
    elif known:
        lines.append(f"the gradients after DDP's all-reduce agree across ranks in all "
                     f"{len(known)} iteration(s) that have them")
    return lines
