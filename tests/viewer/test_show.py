"""``dyngraph.show()`` and what it shows, without a notebook: a trace file's path, the HTML
fallback when anywidget cannot be imported, ``iterations`` read as ``export --iterations``
reads it, and a PyTorch run. (``%%dyngraph`` in a real notebook: test_notebook.py.)"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest
from dyngraph.exporters import batch
from dyngraph.viewer.notebook import HtmlViewer, show, viewer, viewer_data
from viewer_runs import setup_run

import dyngraph
from dyngraph.errors import UserError

RUN = setup_run()  # iterations 0 (setup) to 5; 3 changes its structure, 4 changes back


def indexes(data: Any) -> list[int]:
    return [it["index"] for it in data.meta()["iterations"]]


def displayed(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What ``IPython.display.display`` is given (a stand-in: no notebook front end)."""
    got: list[Any] = []
    fake = types.ModuleType("IPython.display")
    fake.display = got.append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython.display", fake)
    return got


def test_show_a_trace_file_by_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "run.dgtrace"
    RUN.save(path)
    got = displayed(monkeypatch)
    assert show(str(path), widget=False) is None  # displayed once, nothing returned
    assert len(got) == 1 and isinstance(got[0], HtmlViewer)
    data = got[0].data
    assert data.title == "dyngraph: run.dgtrace"
    assert indexes(data) == [it.index for it in RUN.iterations] == [0, 1, 2, 3, 4, 5]
    assert data.meta()["iterations"][0]["setup"]
    assert "run.dgtrace" in got[0]._repr_html_()
    # A pathlib.Path does too; a missing file is one clear error.
    assert indexes(viewer_data(path)) == indexes(data)
    with pytest.raises(UserError):
        viewer_data(tmp_path / "missing.dgtrace")


def test_show_falls_back_to_html_when_anywidget_cannot_be_imported(
        monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "anywidget", None)  # import anywidget: ImportError
    shown = viewer(RUN)  # widget=None: the widget if it can be had, else the HTML
    assert isinstance(shown, HtmlViewer)
    html = shown._repr_html_()
    assert html.startswith("<iframe srcdoc=") and 'sandbox="allow-scripts"' in html
    got = displayed(monkeypatch)
    assert show(RUN) is None and isinstance(got[0], HtmlViewer)
    # Asked for the widget outright: one line saying what to install.
    with pytest.raises(UserError, match=r"pip install 'dyngraph\[notebook\]'"):
        viewer(RUN, widget=True)


@pytest.mark.parametrize(("spec", "expected"), [
    ("all", [0, 1, 2, 3, 4, 5]),
    # The first, the first after setup (setup is nobody's baseline), then each change.
    ("changed", [0, 1, 2, 3, 4]),
    ("4-", [4, 5]),
    ("-2", [0, 1, 2]),
    ("last", [5]),
    ("1,3-4", [1, 3, 4]),
    ("3-99999999999999999999", [3, 4, 5]),
])
def test_iterations_mean_what_export_iterations_means(spec: str, expected: list[int]):
    data = viewer_data(RUN, iterations=spec)
    assert indexes(data) == expected
    items = batch._items(RUN)
    positions, notes = batch.select(spec, items)
    assert [items[p].index for p in positions] == expected
    assert data.notes == notes


def test_a_range_past_the_end_is_cut_with_a_note(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch):
    displayed(monkeypatch)
    show(RUN, iterations="4-9", widget=False)
    err = capsys.readouterr().err
    assert err.strip() == ("dyngraph.show: note: --iterations 4-9: the trace ends at "
                           "iteration 5; took 4-5")


def test_bad_iterations_are_one_clear_error_before_the_file_is_read(tmp_path: Path):
    with pytest.raises(UserError, match=r"3-1 goes down \(or all, changed\)"):
        viewer_data(tmp_path / "not-read.dgtrace", iterations="3-1")
    with pytest.raises(UserError, match="no iteration 7 in this trace"):
        viewer_data(RUN, iterations="7")
    with pytest.raises(UserError, match="no iteration 9 in this trace"):
        viewer_data(RUN, iterations=[1, 9])
    assert indexes(viewer_data(RUN, iterations=[5, 1])) == [1, 5]


def test_a_pytorch_run_feeds_the_viewer():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(5, 3)
    with dyngraph.trace(backend="torch", stats="full") as t:
        for step in range(1, 4):
            loss = model(x * float("nan") if step == 2 else x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    data = viewer_data(t)
    meta = data.meta()
    assert indexes(data) == [1, 2, 3]
    assert [it["changed"] for it in meta["iterations"]] == [False, True, True]
    assert meta["firstNaN"]["index"] == 2 and meta["firstNaN"]["label"] == "mul"
    s = data.structure(0)
    assert {"linear", "relu", "pow", "mean"} <= set(s["tables"]["op"])
    assert {"0", "1", "2"} <= set(s["tables"]["module"])  # the Sequential's children
    v = data.values(0)
    linear = s["tables"]["op"].index("linear")
    first = s["op"].index(linear)
    assert isinstance(v["gnorm"][first], float) and v["gnorm"][first] > 0
    assert len(data.history(s["key"][first])) == 3
    backward = viewer_data(t, graph="backward").structure(0)["tables"]["op"]
    assert "AddmmBackward0" in backward and "AccumulateGrad" in backward
