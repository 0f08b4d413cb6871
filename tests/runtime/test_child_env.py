"""The child's environment is the user's: nothing added, nothing taken away."""

import os
import sys

from dyngraph.debug.session import _child_env

_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def test_the_child_gets_no_thread_setting_the_user_did_not_make():
    """Issue 22: the recorded child got OMP_NUM_THREADS=1 when the user set no thread
    variable, so PyTorch reduced on one thread and rounded differently from the plain run."""
    given = {"PATH": "/usr/bin", "LANG": "C.UTF-8"}
    assert _child_env(given) == given
    assert _child_env({"OMP_NUM_THREADS": "4"}) == {"OMP_NUM_THREADS": "4"}


def test_the_recorded_script_sees_the_thread_settings_python_gives_it(tmp_path):
    """End to end: the environment a script reads under ``dyngraph record`` is the one it
    reads under plain ``python``, thread variables included (none set here)."""
    import json
    import subprocess

    script = tmp_path / "env.py"
    out = tmp_path / "seen.json"
    script.write_text(
        "import json, os, sys\n"
        f"json.dump({{k: os.environ.get(k) for k in {_THREAD_VARIABLES!r}}}, "
        "open(sys.argv[1], 'w'))\n")
    env = {k: v for k, v in os.environ.items() if k not in _THREAD_VARIABLES}
    subprocess.run([sys.executable, str(script), str(tmp_path / "plain.json")], env=env,
                   check=True, timeout=60)
    subprocess.run([sys.executable, "-m", "dyngraph", "record", "-o",
                    str(tmp_path / "run.dgtrace"), str(script), str(out)], env=env,
                   check=True, timeout=120, capture_output=True)
    assert json.loads(out.read_text()) == json.loads((tmp_path / "plain.json").read_text())
    assert json.loads(out.read_text()) == dict.fromkeys(_THREAD_VARIABLES)


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
