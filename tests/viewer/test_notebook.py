"""``%%dyngraph`` in a real notebook (nbclient and an IPython kernel): the widget's model
state, then the widget's own module and the HTML fallback rendered in Chromium."""

from __future__ import annotations

import json
from typing import Any

import pytest
from viewer_runs import chromium, not_blank, ready, watch

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("anywidget")

TRAINING_CELL = """%%dyngraph --stats full --iterations all
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = dyngraph.optim.SGD(model.parameters(), lr=0.1)
for step in range(1, 5):
    x = dyngraph.randn(5, 4)
    if step == 3:
        x = x * float("nan")
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""

# A page standing in for the notebook's front end: it runs the widget's module as
# anywidget does (render({model, el}) with the model's state).
HOST = """async ([esm, css, state]) => {
  const style = document.createElement("style");
  style.textContent = css;
  document.head.appendChild(style);
  const url = URL.createObjectURL(new Blob([esm], {type: "text/javascript"}));
  const mod = await import(url);
  const el = document.createElement("div");
  document.body.appendChild(el);
  const model = {get: k => state[k], on: () => {}};
  mod.default.render({model, el});
}"""


@pytest.fixture(scope="module")
def notebook() -> Any:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import dyngraph\nimport dyngraph.nn as nn\n"
                                  "dyngraph.manual_seed(0)"),
        nbformat.v4.new_code_cell(TRAINING_CELL),
        nbformat.v4.new_code_cell("dyngraph.show(_dyngraph_trace, widget=False)"),
        nbformat.v4.new_code_cell("%%dyngraph --iterations 3-9 --graph backward\n"
                                  + TRAINING_CELL.split("\n", 1)[1]),
        nbformat.v4.new_code_cell("%%dyngraph --iterations 3-1\nlate = 1"),
        nbformat.v4.new_code_cell("'late' in globals()"),
    ]
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     store_widget_state=True)
    client.execute()
    return nb


def _widget_state(nb: Any, cell: int = 1) -> dict[str, Any]:
    view = next(o for o in nb.cells[cell].outputs if o.get("output_type") == "display_data")
    model_id = view["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
    states = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    return states[model_id]["state"]


def test_dyngraph_magic_records_the_cell_into_a_widget(notebook):
    state = _widget_state(notebook)
    meta = state["data"]["meta"]
    assert [it["index"] for it in meta["iterations"]] == [1, 2, 3, 4]
    assert [it["nodes"] for it in meta["iterations"]] == [10, 10, 11, 10]
    assert meta["firstNaN"]["index"] == 3 and meta["firstNaN"]["label"] == "mul"
    assert state["_esm"].rstrip().endswith("};") and "DG.mount" in state["_esm"]
    assert ".dg-viewer" in state["_css"]


def _printed(nb: Any, cell: int) -> str:
    return "".join(o.get("text", "") for o in nb.cells[cell].outputs
                   if o.get("output_type") == "stream")


def test_magic_iterations_and_graph_mean_what_export_takes(notebook):
    """--iterations as export reads it (a range past the end cut, with a note), --graph
    backward, and a typo refused before the cell runs."""
    assert _printed(notebook, 3).strip() == (
        "%%dyngraph: note: --iterations 3-9: the trace ends at iteration 4; took 3-4")
    meta = _widget_state(notebook, 3)["data"]["meta"]
    assert [it["index"] for it in meta["iterations"]] == [3, 4]
    assert meta["graph"] == "backward"
    assert _printed(notebook, 4).strip() == (
        "%%dyngraph: bad --iterations '3-1': 3-1 goes down (or all, changed)")
    ran = next(o for o in notebook.cells[5].outputs if o.get("output_type") == "execute_result")
    assert ran["data"]["text/plain"] == "False"  # the cell never ran


def test_widget_and_html_fallback_render_in_chromium(notebook):
    state = _widget_state(notebook)
    fallback = next(o for o in notebook.cells[2].outputs if o.get("output_type") in (
        "display_data", "execute_result"))
    html = fallback["data"]["text/html"]
    assert html.startswith("<iframe srcdoc=") and 'sandbox="allow-scripts"' in html
    with chromium() as browser:
        page = browser.new_page()
        problems = watch(page)
        page.set_content("<!DOCTYPE html><html><body></body></html>")
        page.evaluate(HOST, [state["_esm"], state["_css"],
                             json.loads(json.dumps(state))])
        ready(page)
        assert "10 nodes" in page.locator(".dg-info").inner_text()
        page.locator(".dg-nan-btn").click()
        page.wait_for_selector('.dg-viewer[data-state=ready][data-iteration="3"]')
        assert page.locator(".dg-details h3").inner_text().startswith("mul")
        assert not_blank(browser, page.screenshot()) > 0.02
        # Without anywidget: the same page in a sandboxed iframe.
        page.set_content(f"<!DOCTYPE html><html><body>{html}</body></html>")
        frame = page.frame_locator("iframe")
        frame.locator("#dg-root[data-state=ready]").wait_for(timeout=20_000)
        assert "10 nodes" in frame.locator(".dg-info").inner_text()
        frame.locator(".dg-unit", has_text="relu").first.click()
        assert "op\trelu" in frame.locator(".dg-details").inner_text()
        assert problems == []
