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
