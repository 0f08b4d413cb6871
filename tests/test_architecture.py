"""The dependency rules of DESIGN.md, checked on the source: the engine never imports the
UI or the exporters, and the UI and exporters never reach into engine internals."""

from __future__ import annotations

import ast
import functools
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@functools.cache  # each test walks the same files: parse each one once per process
def _imports(path: Path, package: str) -> tuple[tuple[str, bool], ...]:
    """(imported module, at module level?) for every import in a file."""
    tree = ast.parse(path.read_text(), str(path))
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([module] if module else []))
            found.append((module, id(node) in top_level))
    return tuple(found)


def _package_files(folder: str, package: str):
    for path in sorted((ROOT / folder).rglob("*.py")):
        rel = path.relative_to(ROOT / folder).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        pkg = ".".join([package, *parts[:-1]]) if path.name != "__init__.py" else ".".join(
            [package, *parts]
        )
        yield path, pkg


def test_engine_never_imports_ui_or_exporters_at_module_level():
    offenders = []
    for path, pkg in _package_files("dyngraph", "dyngraph"):
        for module, top in _imports(path, pkg):
            if module.startswith(("dyngraph.tui", "dyngraph.exporters", "textual", "graphviz")):
                if top or path.name != "cli.py":
                    offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offenders == []


def test_ui_and_exporters_do_not_reach_into_engine_internals():
    offenders = []
    for folder, package in (("tui", "dyngraph.tui"), ("exporters", "dyngraph.exporters"),
                            ("viewer", "dyngraph.viewer")):
        for path, pkg in _package_files(folder, package):
            for module, _ in _imports(path, pkg):
                if module.startswith("dyngraph.engine"):
                    offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offenders == []


def test_no_top_level_tui_or_exporters_package_is_installed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = set(config["packages"])
    assert not {"tui", "exporters", "demos", "viewer"} & packages
    assert config["package-dir"]["dyngraph.tui"] == "tui"
    assert config["package-dir"]["dyngraph.exporters"] == "exporters"
    assert config["package-dir"]["dyngraph.viewer"] == "viewer"
    # The page's scripts and style are package data: a wheel without them shows nothing.
    assert config["package-data"]["dyngraph.viewer"] == ["static/*.js", "static/*.css"]
    static = {p.name for p in (ROOT / "viewer" / "static").iterdir()}
    from dyngraph.viewer.page import SCRIPTS

    assert set(SCRIPTS) | {"viewer.css"} == static


def test_viewer_imports_the_capture_layer_and_never_the_other_way_round():
    """viewer/ (the page behind export, the notebook and view --web) reads capture/; the
    engine reaches it only lazily (dyngraph.show, the magic, the CLI), the UI never; its
    optional dependencies (anywidget, IPython) are imported inside functions only."""
    offenders = []
    for path, pkg in _package_files("viewer", "dyngraph.viewer"):
        for module, top in _imports(path, pkg):
            if module.startswith(("dyngraph.tui", "dyngraph.exporters", "dyngraph.engine",
                                  "dyngraph.debug", "textual", "graphviz", "torch")):
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
            if top and module.split(".")[0] in ("anywidget", "traitlets", "IPython"):
                offenders.append(f"{path.relative_to(ROOT)} imports {module} at module level")
    for folder, package in (("dyngraph", "dyngraph"), ("tui", "dyngraph.tui")):
        for path, pkg in _package_files(folder, package):
            for module, top in _imports(path, pkg):
                if module.startswith("dyngraph.viewer") and (top or folder == "tui"):
                    offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offenders == []


# Modules that turn bytes into objects by running what the bytes name.
_CODE_LOADERS = ("pickle", "_pickle", "cPickle", "cloudpickle", "dill", "marshal", "shelve",
                 "joblib")


def _dynamic_imports(path: Path) -> list[str]:
    """Names passed as constants to ``__import__`` / ``importlib.import_module``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in ("__import__", "import_module") and isinstance(node.args[0].value, str):
                found.append(node.args[0].value)
    return found


def test_no_module_of_the_package_imports_pickle_or_its_kin():
    """Trace files are never pickled and a checkpoint's code never runs: PyTorch's
    checkpoints are read by dyngraph's own pickle machine (serialization/pickle_reader.py),
    which can only build what its allow-list names. Nothing in the package may import a
    module that loads objects by running what a file names."""
    offenders = []
    for folder, package in (("dyngraph", "dyngraph"), ("tui", "dyngraph.tui"),
                            ("exporters", "dyngraph.exporters"), ("viewer", "dyngraph.viewer")):
        for path, pkg in _package_files(folder, package):
            modules = [module for module, _ in _imports(path, pkg)] + _dynamic_imports(path)
            offenders += [f"{path.relative_to(ROOT)} imports {module}" for module in modules
                          if module.split(".")[0] in _CODE_LOADERS]
    assert offenders == []


def test_the_pickle_rule_catches_an_import_of_pickle(tmp_path):
    module = tmp_path / "sneaky.py"
    module.write_text("import importlib\nfrom pickle import loads\n"
                      "m = importlib.import_module('marshal')\n")
    assert [m for m, _ in _imports(module, "x")] == ["importlib", "pickle"]
    assert _dynamic_imports(module) == ["marshal"]


def test_every_package_folder_is_installed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {
        ".".join(("dyngraph", *init.parent.relative_to(ROOT / "dyngraph").parts))
        for init in (ROOT / "dyngraph").rglob("__init__.py")
    }
    assert folders <= set(config["packages"])


def test_capture_layer_knows_no_engine():
    """The capture layer is shared by both backends: it never imports the numpy engine."""
    offenders = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path, pkg in _package_files("dyngraph/capture", "dyngraph.capture")
        for module, _ in _imports(path, pkg)
        if module.startswith(("dyngraph.engine", "dyngraph.nn", "dyngraph.optim"))
    ]
    assert offenders == []


def test_capture_layer_never_imports_the_package_root():
    """``dyngraph/__init__.py`` loads the engine and registers every backend: a capture
    module importing it (even inside a function) would reach them all. The version has its
    own module, ``dyngraph.version``, for the trace header."""
    offenders = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path, pkg in _package_files("dyngraph/capture", "dyngraph.capture")
        for module, _ in _imports(path, pkg)
        if module == "dyngraph"
    ]
    assert offenders == []


def _imports_torch(module: str) -> bool:
    return module == "torch" or module.startswith("torch.")


# The compile lane's one module that imports torch: every private PyTorch API it reads.
COMPILE_ADAPTER = Path("dyngraph/compile_lane/torch_api.py")


def test_only_the_torch_backend_imports_torch():
    """PyTorch is optional: the backend imports it (and the compile lane's adapter, which
    the backend loads at the script's first torch.compile), only when a recording asks."""
    from dyngraph import demos

    offenders = []
    for folder, package in (("dyngraph", "dyngraph"), ("tui", "dyngraph.tui"),
                            ("exporters", "dyngraph.exporters"), ("demos", "dyngraph.demos")):
        for path, pkg in _package_files(folder, package):
            rel = path.relative_to(ROOT)
            if rel.parts[:2] == ("dyngraph", "torch_backend") and path.name != "__init__.py":
                continue
            if rel.parts[:2] == ("dyngraph", "ranks") and path.name in _RANKS_TORCH:
                continue
            if rel == COMPILE_ADAPTER:
                continue
            if folder == "demos" and path.stem in demos.NEEDS_TORCH:
                continue  # a demo written for PyTorch is user code
            offenders += [f"{rel} imports {m}" for m, _ in _imports(path, pkg) if _imports_torch(m)]
    assert offenders == []


# The rank logic's launcher (imports torch inside the function that starts torchrun); its
# torch side is torch_backend/collectives.py.
_RANKS_TORCH = {"launch.py"}


def test_the_rank_logic_imports_torch_only_where_the_script_did():
    """dyngraph/ranks/ runs in every rank of a job, and in the CLI that reads a job's
    traces: none of it imports torch or the PyTorch backend at module level, and only
    runtime.py imports the collectives' torch side (torch_backend/collectives.py), inside
    the callback run once the script has imported torch."""
    for path, pkg in _package_files("dyngraph/ranks", "dyngraph.ranks"):
        for module, top in _imports(path, pkg):
            if _imports_torch(module) or module.startswith("dyngraph.torch_backend"):
                assert not top, f"{path.name} imports {module}"
            if module == "dyngraph.torch_backend.collectives":
                assert path.name == "runtime.py" and not top, f"{path.name} imports {module}"


def test_the_capture_layer_never_imports_the_rank_logic():
    """ranks/ builds on capture/ (events, the tracer's boundaries), never the other way."""
    offenders = [
        f"{path.relative_to(ROOT)} imports {module}"
        for folder in ("dyngraph/capture", "dyngraph/torch_backend", "dyngraph/engine")
        for path, pkg in _package_files(folder, folder.replace("/", "."))
        for module, _ in _imports(path, pkg)
        if module.startswith("dyngraph.ranks")
    ]
    assert offenders == []


def test_nothing_outside_the_backend_imports_it_by_name():
    """The backend registers itself from dyngraph/__init__.py; nothing else reaches in (the
    capture layer, the UI and the exporters stay backend-neutral)."""
    offenders = []
    for folder, package in (("dyngraph", "dyngraph"), ("tui", "dyngraph.tui"),
                            ("exporters", "dyngraph.exporters")):
        for path, pkg in _package_files(folder, package):
            rel = path.relative_to(ROOT)
            registers = rel == Path("dyngraph/__init__.py")
            if rel.parts[:2] == ("dyngraph", "torch_backend") or registers:
                continue
            if rel.parts[:2] == ("dyngraph", "ranks") and path.name in _RANKS_TORCH:
                continue  # torch-only too: it uses the backend's ids and statistics
            offenders += [f"{rel} imports {m}" for m, top in _imports(path, pkg)
                          if m.startswith("dyngraph.torch_backend")
                          and not _collectives_hook(rel, m, top)]
    assert offenders == []


def _collectives_hook(rel: Path, module: str, top: bool) -> bool:
    """The rank logic's one way in: runtime.py loads the collectives' torch side once the
    script imported torch (``test_the_rank_logic_imports_torch_only_where_the_script_did``)."""
    return (rel == Path("dyngraph/ranks/runtime.py") and not top
            and module == "dyngraph.torch_backend.collectives")


def test_the_compile_lane_stands_on_capture_and_nothing_stands_on_it_but_its_users():
    """``compile_lane/`` imports ``capture/``, never the reverse; it is handed the PyTorch
    capture rather than importing the backend; only the backend (which loads the lane),
    the debug runtime (modes, breakpoints, the check and the summary) and the UI use it."""
    offenders = []
    users = {"torch_backend", "debug", "compile_lane"}
    for folder, package in (("dyngraph", "dyngraph"), ("tui", "dyngraph.tui"),
                            ("exporters", "dyngraph.exporters")):
        for path, pkg in _package_files(folder, package):
            rel = path.relative_to(ROOT)
            inside = rel.parts[1] if folder == "dyngraph" and len(rel.parts) > 2 else folder
            for module, _ in _imports(path, pkg):
                if module.startswith("dyngraph.compile_lane") and inside not in users | {"tui"}:
                    offenders.append(f"{rel} imports {module}")
                if inside == "compile_lane" and module.startswith("dyngraph.torch_backend"):
                    offenders.append(f"{rel} imports {module}")
    assert offenders == []


def test_every_private_torch_api_of_the_compile_lane_is_in_its_adapter():
    """One module to update when PyTorch moves its internals (its table says which
    versions were checked); the rest of the lane never names torch at all."""
    offenders = []
    for path, pkg in _package_files("dyngraph/compile_lane", "dyngraph.compile_lane"):
        rel = path.relative_to(ROOT)
        if rel == COMPILE_ADAPTER:
            continue
        offenders += [f"{rel} imports {m}" for m, _ in _imports(path, pkg) if _imports_torch(m)]
        tree = ast.parse(path.read_text(), str(path))
        offenders += [f"{rel}:{node.lineno} names torch" for node in ast.walk(tree)
                      if isinstance(node, ast.Name) and node.id == "torch"]
    assert offenders == []
    assert (ROOT / COMPILE_ADAPTER).read_text().count("CHECKED_VERSIONS") >= 2


_STARTUP_PROBE = """
import sys
import dyngraph
from dyngraph import cli
from dyngraph.debug import commands, session  # what `dyngraph record` runs in its parent
from dyngraph.debug import child  # what the child that runs a PyTorch script imports
heavy = ("dyngraph.engine", "dyngraph.nn", "dyngraph.optim", "dyngraph.distributions",
         "textual", "torch")
print(sorted(m for m in sys.modules if m.split(".")[0] in ("textual", "torch")
             or any(m == h or m.startswith(h + ".") for h in heavy if "." in h)))
t = dyngraph.tensor([1.0, 2.0])
print(float((t * 2).sum()), type(dyngraph.nn.Linear(2, 1)).__name__,
      "dyngraph.optim" in sys.modules, "dyngraph.distributions" in sys.modules)
"""


def test_the_package_root_loads_the_engine_only_when_a_name_of_it_is_used():
    """``import dyngraph`` (the CLI, the child that runs a PyTorch script) costs the capture
    layer only; the first engine name loads what ``import dyngraph`` always gave a script."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _STARTUP_PROBE], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    loaded_before, used = out.stdout.splitlines()
    assert loaded_before == "[]"
    assert used == "6.0 Linear True True"


def test_every_public_name_of_the_package_root_resolves():
    import dyngraph

    missing = [name for name in dyngraph.__all__ if not hasattr(dyngraph, name)]
    assert missing == []
    assert set(dyngraph.__all__) <= set(dir(dyngraph))
    assert dyngraph.bool is dyngraph.engine.dtypes.bool_
    assert dyngraph.trace(dyngraph.eye(3)).item() == 3.0  # torch.trace, not a recording
    try:
        dyngraph.fft  # noqa: B018
    except AttributeError as e:
        assert "dyngraph does not implement torch.fft" in str(e)
    else:
        raise AssertionError("dyngraph.fft resolved")


_RACE_PROBE = """
import threading
import dyngraph

barrier = threading.Barrier(8)
errors = []

def first_use(i):
    barrier.wait()
    try:
        x = dyngraph.ones(2, requires_grad=True) if i % 2 else dyngraph.nn.Linear(2, 1).weight
        (x * 2).sum().backward()
    except Exception as e:
        errors.append(repr(e))

threads = [threading.Thread(target=first_use, args=(i,)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(errors)
"""


def test_threads_reading_their_first_engine_name_at_once_all_get_it():
    """A script whose threads start at once (a data loader's and the main one) loads the
    engine once: the others wait for it (loaded alongside, one thread found a module half
    made, ImportError or a _DeadlockError, 8 runs in 8)."""
    import subprocess
    import sys

    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", _RACE_PROBE], capture_output=True,
                             text=True, timeout=120, cwd=ROOT)
        assert (out.returncode, out.stdout.strip()) == (0, "[]"), out.stderr
