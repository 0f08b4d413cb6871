"""The child's environment: BLAS pinned to one thread unless the user chose otherwise."""

from dyngraph.debug.session import _child_env


def test_blas_runs_on_one_thread_by_default():
    env = _child_env({"PATH": "/usr/bin"})
    assert env["OPENBLAS_NUM_THREADS"] == "1"
    assert env["PATH"] == "/usr/bin"


def test_a_users_thread_setting_is_kept():
    env = _child_env({"OMP_NUM_THREADS": "4"})
    assert env["OMP_NUM_THREADS"] == "4"
    assert "OPENBLAS_NUM_THREADS" not in env


def test_the_child_runs_this_dyngraph_and_the_script_sees_pythons_own_path(tmp_path):
    """A run started from a folder holding another ``dyngraph`` (the README's quick start:
    ``pip install .`` then ``dyngraph demo`` in the checkout) must not import that copy:
    it took the bundled demos for library code, so the variables pane showed no frame.
    The script's sys.path is what ``python script.py`` gives: its folder first, no cwd."""
    import json
    import time

    import dyngraph
    from dyngraph.debug.session import Session

    decoy = tmp_path / "cwd" / "dyngraph"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise ImportError('the decoy dyngraph was imported')\n")
    folder = tmp_path / "scripts"
    folder.mkdir()
    out = tmp_path / "seen.json"
    script = folder / "where.py"
    script.write_text(
        "import json, os, sys\nimport dyngraph\n"
        f"json.dump({{'dyngraph': dyngraph.__file__, 'path0': sys.path[0], "
        f"'cwd_on_path': os.getcwd() in sys.path or '' in sys.path}}, open({str(out)!r}, 'w'))\n")
    session = Session.start(str(script), [], pause_at_start=False, cwd=str(tmp_path / "cwd"))
    try:
        deadline = time.monotonic() + 30
        while not session.state.finished:
            assert time.monotonic() < deadline, session.state
            session.poll(0.05)
    finally:
        session.close()
    assert session.state.exit_status == 0, session.state
    seen = json.loads(out.read_text())
    assert seen == {"dyngraph": dyngraph.__file__, "path0": str(folder), "cwd_on_path": False}
