"""The viewer page in a real browser (headless Chromium): the exported index.html and the
``view --web`` server, clicked through as a user would, with one browser for the module
and several checks per page load."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dyngraph.viewer import ViewerData, page_html
from dyngraph.viewer.server import ViewerServer
from viewer_runs import (
    BLOCKS,
    EVIL_MODULE,
    EVIL_PARAM,
    NAN_ITERATION,
    chromium,
    not_blank,
    ready,
    setup_run,
    training_run,
    watch,
)

from dyngraph.capture import folding as fd


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as context:
        yield context


@pytest.fixture(scope="module")
def run() -> Any:
    return training_run()


def text(page: Any, selector: str) -> str:
    return page.locator(selector).first.inner_text()


def at_iteration(page: Any, index: int) -> None:
    """Wait until the page shows iteration ``index`` (no string evaluated: the page's
    policy allows no eval)."""
    page.wait_for_selector(f'#dg-root[data-state=ready][data-iteration="{index}"]')


def unit(page: Any, label: str) -> Any:
    """The box whose first line is ``label``."""
    return page.locator(".dg-unit", has=page.locator("text.dg-l1", has_text=label)).first


def test_exported_page_click_slide_open_diff_and_first_nan(browser, run, tmp_path: Path):
    from dyngraph.exporters import export_iterations

    export_iterations(run, tmp_path, formats=("dot",))
    page = browser.new_page()
    problems = watch(page)
    page.goto((tmp_path / "index.html").as_uri())
    ready(page)

    # Opens folded by module: the 40 blocks are one box, not 320 nodes.
    assert "331 nodes" in text(page, ".dg-info")
    run_box = unit(page, f"blocks.0 … blocks.{BLOCKS - 1} ×{BLOCKS}")
    assert run_box.count() == 1
    assert not_blank(browser, page.screenshot()) > 0.02

    # Click a node, read the panel: op, module, source line, value and gradient summaries.
    unit(page, "mul").click()
    details = text(page, ".dg-details")
    assert "op\tmul" in details and "module\t(top level)" in details
    assert "viewer_runs.py:" in details and "in forward" in details
    assert "norm" in text(page, ".dg-vstats") and "norm" in text(page, ".dg-gstats")
    page.wait_for_selector(".dg-details .dg-sparkline path.dg-spark-line")

    # Names that are markup are shown as text and run nothing.
    unit(page, EVIL_PARAM[:20]).click()
    assert text(page, ".dg-details h3").startswith(EVIL_PARAM)
    assert any(EVIL_MODULE in t for t in page.locator(".dg-frame-label").all_text_contents())

    # Open the run of blocks, then one block: only they are laid out anew.
    before = page.locator(".dg-unit").count()
    run_box.dblclick()
    ready(page)
    assert page.locator(".dg-unit").count() == before - 1 + BLOCKS
    unit(page, "blocks.7").dblclick()
    page.wait_for_selector('.dg-frame[data-key="blocks.7#1"]')
    inside = page.locator('.dg-frame[data-key="blocks.7#1"] .dg-frame-label').text_content()
    assert "blocks.7" in inside
    # One level opens: its own ops drawn, its submodules still boxes of their own.
    assert unit(page, "blocks.7.a").count() == 1 and unit(page, "relu").count() == 1

    # The slider: iteration 2 changed its structure (a batch of 5).
    page.locator(".dg-slider").evaluate(
        "(s) => { s.value = 1; s.dispatchEvent(new Event('input')); }")
    at_iteration(page, 2)
    assert text(page, ".dg-current").startswith("iteration 2 (2 of 4)")
    assert page.locator(".dg-badge").is_visible()

    # The diff with iteration 1 (key d): every batch-shaped node was reshaped.
    page.locator("#dg-root").press("d")
    page.wait_for_selector(".dg-diff-summary")
    summary = text(page, ".dg-diff-summary")
    assert "0 added, 0 removed" in summary and "reshaped" in summary
    assert int(summary.split(" reshaped")[0].split()[-1]) > BLOCKS
    assert page.locator(".dg-unit.dg-changed").count() > 0
    page.locator("#dg-root").press("d")
    assert page.locator(".dg-diff").is_hidden()

    # Keys [ and ] / i move between iterations as in the terminal.
    page.locator("#dg-root").press("[")
    at_iteration(page, 1)

    # The first NaN/Inf: one button goes to its iteration and node, its module opened.
    page.locator(".dg-nan-btn").click()
    at_iteration(page, NAN_ITERATION)
    assert text(page, ".dg-details h3").startswith("mul")
    assert page.locator(".dg-unit.dg-first.dg-sel").count() == 1
    assert "NaN / Inf" in text(page, ".dg-vstats")

    # n: the next op; / finds by tensor id.
    tensor_id = text(page, ".dg-details table.dg-node td")
    page.locator("#dg-root").press("n")
    assert not text(page, ".dg-details h3").startswith("mul")
    page.locator("#dg-root").press("/")
    page.keyboard.type(f"#{tensor_id}")
    page.wait_for_selector(".dg-results .dg-hit-btn")
    assert page.locator(".dg-results .dg-hit-btn").count() == 1
    page.keyboard.press("Enter")
    assert text(page, ".dg-details h3").startswith("mul")

    assert page.evaluate("typeof self.__pwned") == "undefined"
    assert problems == []
    page.close()


def test_page_names_setup_and_diffs_nothing_against_it(browser, tmp_path: Path):
    """Iteration 0 is setup (issue 27): named so, never "changed", and d there and on
    iteration 1 says why it compares nothing, as the terminal's d does."""
    (tmp_path / "index.html").write_text(
        page_html(ViewerData.from_trace(setup_run()).everything()), encoding="utf-8")
    page = browser.new_page()
    problems = watch(page)
    page.goto((tmp_path / "index.html").as_uri())
    at_iteration(page, 0)
    assert text(page, ".dg-current") == "iteration 0, setup (1 of 6)"
    assert page.locator(".dg-tick.dg-setup").count() == 1
    assert page.locator(".dg-tick.dg-changed").count() == 3  # 2, 3 and 4
    assert "iteration 0, setup" in page.locator(".dg-tick").first.get_attribute("title")
    page.locator("#dg-root").press("d")
    assert "setup (the work before" in text(page, ".dg-diff-none")
    page.locator("#dg-root").press("]")
    at_iteration(page, 1)
    assert page.locator(".dg-diff").is_hidden()  # the note was about setup
    assert page.locator(".dg-badge").is_hidden()  # not "changed" against setup
    page.locator("#dg-root").press("d")
    assert "setup before it (iteration 0) is no baseline" in text(page, ".dg-diff-none")
    assert page.locator(".dg-diff-summary").count() == 0
    page.locator("#dg-root").press("d")
    assert page.locator(".dg-diff").is_hidden()
    page.locator("#dg-root").press("]")
    at_iteration(page, 2)
    assert page.locator(".dg-badge").is_visible()
    page.locator("#dg-root").press("d")
    page.wait_for_selector(".dg-diff-summary")
    assert text(page, ".dg-diff h4") == "iteration 2 vs 1"
    assert problems == []
    page.close()


def test_page_folds_as_python_does(browser, run):
    """The page's fold (viewer/static/fold.js) and dyngraph.capture.folding.fold give the
    same boxes, in the same order, and the same edges, for the same open sets."""
    data = ViewerData.from_trace(run)
    structure = data.structure(0)
    tree = fd.ModuleTree.from_graph(run.iterations[0].graph)
    book = [bool(b) for b in structure["book"]]
    calls, runs = list(tree.calls), list(tree.runs)
    open_sets = [[], sorted(fd.auto_expanded(tree)), runs, calls + runs, ["blocks"],
                 [*runs, "blocks.3#1", "blocks.3.a#1"], [calls[len(calls) // 2]]]
    expected = []
    for opened in open_sets:
        f = fd.fold(tree, opened, book)
        expected.append({"units": [dataclasses.asdict(u) for u in f.units],
                         "unitOf": f.unit_of, "edges": [list(e) for e in f.edges]})
    page = browser.new_page()
    page.set_content("<p>fold</p>")
    from dyngraph.viewer.page import script_text

    page.add_script_tag(content=script_text())
    got = page.evaluate("""([S, sets]) => sets.map(open => {
        const inputs = i => S.inFlat.slice(S.inStart[i], S.inStart[i + 1]);
        const f = DG.fold(S.tree, open, S.book, inputs);
        return {units: f.units, unitOf: f.unitOf, edges: f.edges};
    })""", [structure, open_sets])
    page.close()
    assert len(got) == len(expected)
    for opened, g, e in zip(open_sets, got, expected, strict=True):
        assert g == e, f"folds differ with {opened} open"


@pytest.fixture()
def server(run) -> Iterator[ViewerServer]:
    srv = ViewerServer(ViewerData.from_trace(run))
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_web_server_page_in_the_browser(browser, server):
    # Without the token: refused.
    refused = browser.new_page()
    response = refused.goto(server.url.split("?")[0])
    assert response is not None and response.status == 403
    refused.close()
    page = browser.new_page()
    problems = watch(page)
    response = page.goto(server.url)
    assert response is not None and response.status == 200
    ready(page)
    assert "331 nodes" in text(page, ".dg-info")
    unit(page, "pow").click()
    assert "op\tpow" in text(page, ".dg-details")
    # The sparkline's history comes from the server.
    page.wait_for_selector(".dg-details .dg-sparkline path.dg-spark-line")
    page.locator("#dg-root").press("]")
    at_iteration(page, 2)
    page.locator(".dg-nan-btn").click()
    at_iteration(page, NAN_ITERATION)
    assert text(page, ".dg-details h3").startswith("mul")
    # Another site's page may not read the trace, token or not.
    other = page.request.get(server.url.replace("/?", "/api/meta?"),
                             headers={"Origin": "http://evil.example"})
    assert other.status == 403
    assert not_blank(browser, page.screenshot()) > 0.02
    assert page.evaluate("typeof self.__pwned") == "undefined"
    assert problems == []
    page.close()
