"""The rank x iteration grid of a job (``dyngraph view run.rank0.dgtrace``)."""

from __future__ import annotations

from dyngraph.tui.rank_grid import RankGridApp
from rank_traces import write_job
from textual.widgets import DataTable, Static

from dyngraph.ranks import jobtrace


def text_of(app: RankGridApp, selector: str) -> str:
    return str(app.query_one(selector, Static).content)


async def test_view_opens_the_grid_on_the_divergence_and_enter_opens_a_rank(tmp_path):
    given = write_job(tmp_path, 2, r1={"losses": [1.0, 0.5, 0.25], "diverged_at": 3,
                                       "end": False, "odd_at": 2})
    app = RankGridApp(jobtrace.read(str(given)))
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(DataTable)
        assert table.row_count == 3 and len(table.columns) == 5
        cell = table.get_cell_at((1, 2)).plain  # rank 1, iteration 2: another graph
        assert cell.startswith("0.5") and cell.endswith("✗")
        assert table.get_cell_at((1, 3)).plain == "ranks 1 differ"
        # the cursor starts on the divergence: rank 1, iteration 3
        assert table.cursor_coordinate == (2, 2)
        await pilot.pause()
        detail = text_of(app, "#detail")
        assert "rank 1, iteration 3" in detail and "◆ ranks diverged at iteration 3" in detail
        assert "diverged at iteration 3" in text_of(app, "#title")
        await pilot.press("up", "left")  # rank 0, iteration 2
        await pilot.pause()
        assert "rank 0, iteration 2: loss 0.5" in text_of(app, "#detail")
        await pilot.press("enter")
    assert app.return_value == (0, 2)


async def test_q_leaves_the_grid(tmp_path):
    app = RankGridApp(jobtrace.read(str(write_job(tmp_path, 2))))
    async with app.run_test() as pilot:
        await pilot.press("q")
    assert app.return_value is None
