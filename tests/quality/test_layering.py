"""The layers and the papers stay apart.

* theory/ is sympy only, numerics/ never sees sympy, only verify/ joins them.
* Each layer has a generic core at its root and one subpackage per paper (theory/li2,
  numerics/ns, verify/claims/li2, ...). The core imports no paper; a paper imports no other
  paper.
* A claim imports the core only through the public API (``verify``, ``verify.arrays``) and
  never another claim: what several claims share lives in a private module of their paper
  (``verify/claims/li2/_landscape.py``).
"""
import ast
from pathlib import Path

import pytest

from verify.code_closure import import_graph
from verify.registry import papers

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("theory", "numerics", "verify")
#: The built-in papers, as they declare themselves: each one's code is its package of that
#: name in every layer (theory/li2, numerics/li2, verify/claims/li2).
PAPERS = tuple(paper.id for paper in papers(builtin_only=True))
FORBIDDEN = {
    "theory": {"torch", "numpy", "scipy", "numerics", "verify"},
    "numerics": {"sympy", "theory", "verify"},
}
PUBLIC_API = {"verify", "verify.arrays", "verify.bounds", "verify.design"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, *, members: bool = True) -> set[str]:
    """Full dotted names of the modules ``path`` imports (``from a.b import c`` gives ``a.b``
    and, with ``members``, ``a.b.c``: ``c`` may be a submodule)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # the toolkit imports absolutely; a user's package may not
                assert path.is_relative_to(ROOT / "examples"), f"{path}: relative import"
                continue
            names.add(node.module)
            if members:
                names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def _paper(module: str) -> str | None:
    """The paper whose package holds ``module`` (None: the core)."""
    parts = module.split(".")
    if parts[0] in ("theory", "numerics") and len(parts) > 1 and parts[1] in PAPERS:
        return parts[1]
    if parts[:2] == ["verify", "claims"] and len(parts) > 2 and parts[2] in PAPERS:
        return parts[2]
    return None


def _sources(layer: str) -> list[Path]:
    return sorted((ROOT / layer).rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports(layer):
    offenders = {str(p.relative_to(ROOT)): sorted({n.split(".")[0] for n in _imports(p)}
                                                  & FORBIDDEN[layer])
                 for p in _sources(layer)}
    assert {k: v for k, v in offenders.items() if v} == {}


@pytest.mark.parametrize("layer", LAYERS)
def test_the_core_imports_no_paper(layer):
    offenders = {}
    for p in _sources(layer):
        module = _module_name(p)
        if _paper(module) or module.startswith("verify.claims"):
            continue
        bad = sorted(n for n in _imports(p) if _paper(n) or n.startswith("verify.claims."))
        if bad:
            offenders[module] = bad
    assert offenders == {}


@pytest.mark.parametrize("layer", LAYERS)
def test_no_paper_imports_another(layer):
    offenders = {}
    for p in _sources(layer):
        own = _paper(_module_name(p))
        if own is None:
            continue
        bad = sorted(n for n in _imports(p) if _paper(n) not in (None, own))
        if bad:
            offenders[_module_name(p)] = bad
    assert offenders == {}


def _claim_modules() -> list[Path]:
    return [p for paper in PAPERS for p in sorted((ROOT / "verify/claims" / paper).glob("*.py"))
            if not p.name.startswith("_")]


def test_claims_import_no_other_claim():
    offenders = {}
    for p in _claim_modules():
        paper = _paper(_module_name(p))
        package = f"verify.claims.{paper}"
        bad = sorted(n for n in _imports(p)
                     if n.startswith(package + ".") and not n.split(".")[3].startswith("_")
                     and n.split(".")[3] != "PAPER")
        if bad:
            offenders[_module_name(p)] = bad
    assert offenders == {}


def test_claims_use_the_core_through_its_public_api():
    offenders = {}
    for p in _claim_modules() + sorted((ROOT / "verify/claims").rglob("_*.py")):
        if p.name == "__init__.py":
            continue
        bad = sorted(n for n in _imports(p, members=False)
                     if n.split(".")[0] == "verify" and not n.startswith("verify.claims")
                     and n not in PUBLIC_API)
        if bad:
            offenders[_module_name(p)] = bad
    assert offenders == {}


def test_the_worked_example_uses_only_the_public_api():
    """examples/ is a researcher's own paper: it reaches the toolkit the way theirs would."""
    offenders = {}
    for p in sorted((ROOT / "examples").rglob("*.py")):
        bad = sorted(n for n in _imports(p, members=False)
                     if n.split(".")[0] in LAYERS and n not in PUBLIC_API)
        if bad:
            offenders[str(p.relative_to(ROOT))] = bad
    assert offenders == {}


#: The services built on the verify kernel (the store, the sweep engine, the check pool,
#: stress, mutate, estimates, diagnosis, the pytest plugin, the report and the CLI). Every
#: other module of verify/ outside the claims is the kernel, a new one included.
SERVICES = ("verify.store", "verify.sweep", "verify.check_pool", "verify.stress",
            "verify.mutate", "verify.estimates", "verify.diagnosis", "verify.pytest_plugin",
            "verify.report", "verify.cli", "verify.__main__", "verify.references",
            "verify.mutant_table")


def _is_service(module: str) -> bool:
    return any(module == s or module.startswith(s + ".") for s in SERVICES)


def _graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports, at any depth of the file (inside functions
    too), read from the sources (verify.code_closure, which reference results use as well)."""
    return import_graph(ROOT, LAYERS)


def test_the_kernel_imports_no_service():
    """Not even inside a function: what the kernel needs from above is handed to it
    (verify/hooks.py)."""
    graph = _graph()
    offenders = {m: sorted(n for n in out if _is_service(n)) for m, out in graph.items()
                 if m.startswith("verify") and not _is_service(m)
                 and not m.startswith("verify.claims")}
    assert {m: bad for m, bad in offenders.items() if bad} == {}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_anywhere():
    assert _circles(_graph()) == []


def test_the_circle_finder_finds_a_planted_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
