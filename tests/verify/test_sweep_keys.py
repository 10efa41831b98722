"""A sweep point's key covers the code its point function can run, and no more (issue 28: a
stopped paper-size run resumes through the store after an edit elsewhere in the tree): a
docstring, a comment or a module outside the point function's import closure keeps every
stored point; an edit to a module the point function imports, directly or not, recomputes
them."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from verify import code_closure
from verify.code_closure import module_code_digest, project_modules
from verify.sweep import run_sweep

# --- the digest, on a small project of its own ----------------------------------------------------

#: A project root: ``numerics.points`` imports ``numerics.sim``, which imports ``numerics.core``
#: inside a function; ``numerics.report`` and ``theory.other`` are outside that closure.
TREE = {
    "numerics/__init__.py": '"""The layer."""\n',
    "numerics/core.py": "def twice(x):\n    return 2 * x\n",
    "numerics/sim.py": ('"""The simulation."""\n\n\ndef step(x):\n'
                        '    from numerics.core import twice\n    return twice(x) + 1\n'),
    "numerics/points.py": ('"""Point functions."""\nfrom numerics.sim import step\n\n\n'
                           'def point(p):\n    """One point."""\n    return {"y": step(p["x"])}\n'),
    "numerics/report.py": '"""A report."""\n\n\ndef show(r):\n    return str(r)\n',
    "theory/__init__.py": "",
    "theory/other.py": "A = 1\n",
    "verify/__init__.py": "",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name, text in TREE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def _edit(root: Path, name: str, old: str, new: str) -> None:
    path = root / name
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))


@pytest.mark.parametrize("name, old, new", [
    ("numerics/points.py", '"""One point."""', '"""One point, rewritten."""'),
    ("numerics/sim.py", "return twice(x) + 1", "return (twice(x)   # why\n            + 1)"),
    ("numerics/report.py", "return str(r)", "return repr(r)"),
    ("theory/other.py", "A = 1", "A = 2"),
])
def test_a_docstring_a_comment_or_a_module_outside_the_closure_keeps_the_digest(
        tree, name, old, new):
    before = module_code_digest("numerics.points", root=tree)
    _edit(tree, name, old, new)
    assert module_code_digest("numerics.points", root=tree) == before


@pytest.mark.parametrize("name, old, new", [
    ("numerics/points.py", 'step(p["x"])', 'step(p["x"]) * 2'),
    ("numerics/sim.py", "+ 1", "+ 2"),                     # imported directly
    ("numerics/core.py", "2 * x", "3 * x"),                # imported by sim, inside a function
    ("numerics/__init__.py", '"""The layer."""', "import math"),  # runs before any numerics.*
])
def test_an_edit_to_the_code_the_point_function_can_run_changes_the_digest(tree, name, old, new):
    before = module_code_digest("numerics.points", root=tree)
    _edit(tree, name, old, new)
    assert module_code_digest("numerics.points", root=tree) != before


def test_a_module_outside_the_layers_is_read_from_its_file_with_its_project_imports(tree):
    outside = tree / "mypoints.py"
    outside.write_text("from numerics.sim import step\n")
    before = module_code_digest("mypoints", outside, root=tree)
    _edit(tree, "numerics/core.py", "2 * x", "3 * x")
    assert module_code_digest("mypoints", outside, root=tree) != before
    with pytest.raises(ValueError, match="'mypoints' is not a module of theory, numerics, "
                                         "verify .* no source file"):
        module_code_digest("mypoints", root=tree)


# --- through a sweep and its store ----------------------------------------------------------------

POINTS = '''"""A point function outside the layers that imports one of the project's modules."""
from numerics.random import make_generator, randn


def doubled(point):
    """Twice x, and a draw seeded by it."""
    return {"y": 2 * point["x"], "draw": randn(1, generator=make_generator(point["x"])).item()}
'''


@pytest.fixture
def doubled(tmp_path, monkeypatch):
    """The point function of :data:`POINTS`, imported from its own file in ``tmp_path``."""
    path = tmp_path / "sweep_key_points.py"
    path.write_text(POINTS)
    spec = importlib.util.spec_from_file_location("sweep_key_points", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "sweep_key_points", module)
    spec.loader.exec_module(module)
    return module.doubled


def _reused(fn, store: Path) -> list[bool]:
    report = run_sweep(fn, [{"x": x} for x in range(3)], name="keys", store=store,
                       progress=None)
    assert not report.failed
    return [o.reused for o in report.outcomes]


def _reading(monkeypatch, module: str) -> None:
    """Make ``module``'s code read as if edited (a statement appended), without touching it."""
    path, real = project_modules()[module], code_closure.code_text
    monkeypatch.setattr(code_closure, "code_text",
                        lambda p: real(p) + ("edited" if p == path else ""))


def test_a_stored_point_survives_edits_outside_its_code_and_not_inside(doubled, tmp_path,
                                                                        monkeypatch):
    store, source = tmp_path / "s.sqlite", Path(sys.modules[doubled.__module__].__file__)
    assert _reused(doubled, store) == [False] * 3
    source.write_text(POINTS.replace("Twice x, and", "x doubled, and")   # a docstring
                      .replace("return {", "return {  # a comment\n            "))
    assert _reused(doubled, store) == [True] * 3
    with monkeypatch.context() as m:       # a module the point function cannot run
        _reading(m, "verify.report")
        assert _reused(doubled, store) == [True] * 3
    with monkeypatch.context() as m:       # the module it imports
        _reading(m, "numerics.random")
        assert _reused(doubled, store) == [False] * 3
    source.write_text(POINTS.replace('"y": 2 *', '"y": 3 *'))            # its own code
    assert _reused(doubled, store) == [False] * 3
