"""The project's import graph, read from the sources (never by importing them), and the code a
module stands on: what a reference result's fingerprint (:func:`claim_code_digest`) and a sweep
point's key (:func:`module_code_digest`) cover, and what the layering tests read.

An edge ``a -> b`` is an import of ``b`` anywhere in ``a`` (inside functions too);
``from a import b`` names the module ``a.b`` where there is one, else ``a``.

>>> graph = import_graph()
>>> "numerics.li2.trainer" in closure(graph, "verify.claims.li2.eq6")
True
>>> any(m.startswith("verify.claims.ns") for m in closure(graph, "verify.claims.li2.eq6"))
False
"""
from __future__ import annotations

import ast
import hashlib
from collections.abc import Mapping
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("theory", "numerics", "verify")


def module_name(path: Path, root: Path = ROOT) -> str:
    """``verify/claims/li2/eq6.py`` -> ``verify.claims.li2.eq6`` (a package by its folder)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules(root: Path = ROOT, layers: tuple[str, ...] = LAYERS) -> dict[str, Path]:
    """Every module of the three layers, by dotted name."""
    return {module_name(p, root): p
            for layer in layers for p in sorted((root / layer).rglob("*.py"))}


@cache   # keyed by the text: a digest asked for per sweep re-reads the files, parses none again
def _imports(text: str, filename: str) -> tuple[tuple[str | None, tuple[str, ...]], ...]:
    """``(None, names)`` per ``import names``, ``(module, names)`` per ``from module import
    names`` (relative imports left out: the layers import absolutely)."""
    out: list[tuple[str | None, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(text, filename=filename)):
        if isinstance(node, ast.Import):
            out.append((None, tuple(a.name for a in node.names)))
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.append((node.module, tuple(a.name for a in node.names)))
    return tuple(out)


def _edges(path: Path, modules: Mapping[str, Path]) -> set[str]:
    out = set()
    for module, names in _imports(path.read_text(encoding="utf-8"), str(path)):
        if module is None:
            out.update(n for n in names if n in modules)
        else:
            subs = {f"{module}.{n}" for n in names} & modules.keys()
            out.update(subs)
            if len(subs) < len(names) and module in modules:
                out.add(module)
    return out


def import_graph(root: Path = ROOT, layers: tuple[str, ...] = LAYERS) -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    modules = project_modules(root, layers)
    return {m: _edges(p, modules) - {m} for m, p in modules.items()}


def closure(graph: dict[str, set[str]], module: str) -> set[str]:
    """``module`` and every project module it imports, directly or not."""
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph.get(m, ()))
    return seen


def is_machinery(module: str) -> bool:
    """The verify kernel and services (``verify.*`` outside ``verify.claims``): how a verdict
    is computed and shown, not what a claim computes."""
    return module.split(".")[0] == "verify" and not module.startswith("verify.claims")


@cache
def claim_code_digest(module: str) -> str:
    """A digest of the code (:func:`code_text`) of ``module`` and of every module of the project
    it stands on,
    the toolkit's machinery left out (:func:`is_machinery`): the claim's own code, its
    paper's shared modules, and the numerics and theory it calls. A reference result made
    under another digest was made by other claim code."""
    modules = project_modules()
    return _digest({m: modules[m] for m in closure(import_graph(), module)
                    if m in modules and not is_machinery(m)})


def module_code_digest(module: str, source: Path | None = None, root: Path = ROOT) -> str:
    """A digest of the code (:func:`code_text`) that importing ``module`` can run: its own and
    that of every project module it imports, directly or not, with the packages above each
    (Python runs a package's ``__init__`` before the module), the toolkit's machinery
    included. What a sweep point is keyed by (:func:`verify.sweep.code_fingerprint`): a
    docstring, a comment, or a module outside the closure (a report, another paper's claims)
    leaves it as it was.

    ``source``: the file of a module outside the layers (a test's or a script's point
    function), read for its code and its imports; a module of the layers is read from
    ``root``. ``ValueError`` when neither holds ``module``: its code cannot be read.

    >>> a = module_code_digest("numerics.li2.sweep_points")
    >>> a == module_code_digest("numerics.li2.sweep_points") != module_code_digest("numerics")
    True
    """
    modules = project_modules(root)
    if module in modules:
        files, todo = {}, [module]
    elif source is not None:
        files, todo = {module: source}, sorted(_edges(source, modules))
    else:
        raise ValueError(f"module: {module!r} is not a module of {', '.join(LAYERS)} under "
                         f"{root} and no source file was given: its code cannot be read")
    graph = import_graph(root)
    while todo:
        m = todo.pop()
        if m not in files:
            files[m] = modules[m]
            todo.extend(graph[m])
            parent = m.rpartition(".")[0]
            if parent in modules:
                todo.append(parent)
    return _digest(files)


def _digest(files: Mapping[str, Path]) -> str:
    """The digest of the code of ``files`` (module name -> file), in the order of the names."""
    h = hashlib.sha256()
    for m in sorted(files):
        h.update(m.encode() + b"\0" + code_text(files[m]).encode())
    return h.hexdigest()[:16]


def code_text(path: Path) -> str:
    r"""What a module computes, as text: its syntax tree without docstrings, so that a comment,
    a docstring or a line wrapped differently does not make a reference stale.

    >>> import tempfile
    >>> a, b = (Path(tempfile.mkstemp(suffix=".py")[1]) for _ in range(2))
    >>> _ = a.write_text('def f(x):\n    "Twice x."\n    return 2 * x  # why\n')
    >>> _ = b.write_text('def f(x):\n    return (2\n            * x)\n')
    >>> code_text(a) == code_text(b)
    True
    """
    return _code_text(path.read_text(encoding="utf-8"), str(path))


@cache   # keyed by the text, as _imports
def _code_text(text: str, filename: str) -> str:
    tree = ast.parse(text, filename=filename)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)
