"""Every citation of a paper's sources resolves inside the repository (issue 17).

A reference is ``SOURCES §X.Y`` (optionally ``verify/claims/<paper>/SOURCES.md §X.Y``), possibly
followed by more sections joined by ``,``, ``and`` or ``-`` (``SOURCES §5.5, §5.6``), or a
claim entry ``SOURCES ``li2.thm6`` and ``li2.secA1````. The paper is the one named in the path,
else the built-in paper's package the file lives in, else the last explicit path earlier
in the same file. Each must match a heading of that paper's ``SOURCES.md``.
"""
from __future__ import annotations

import re
from pathlib import Path

from verify.registry import papers

ROOT = Path(__file__).resolve().parents[2]
#: Each built-in paper's sources file, by paper id (its declaration's ``sources``).
SOURCES = {paper.id: paper.sources for paper in papers(builtin_only=True)}
PAPERS = tuple(SOURCES)
SKIP_DIRS = {".git", "build", "dist", "__pycache__", ".hypothesis", ".pytest_cache", ".venv"}

_SECTION = r"§\d+(?:\.\d+)*"
_SEP = r"(?:,\s*|\s+and\s+|\s*[-–]\s*)"
_ID = r"``?([a-z0-9]+\.[\w.-]+?)``?"
_PAPER = "|".join(map(re.escape, PAPERS))
REF = re.compile(rf"(?:verify/claims/(?P<paper>{_PAPER})/)?SOURCES(?:\.md)?`?\s+"
                 rf"(?P<chain>(?:{_SECTION}|{_ID})(?:{_SEP}(?:{_SECTION}|{_ID}))*)")
HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.M)
#: The findings page, generated from a results file (``report --findings``): its citations are
#: the claims' ``source`` fields, each checked in the claim's own module, with both papers on
#: one page.
GENERATED_FINDINGS = Path("docs") / "findings.md"

FORBIDDEN = ("../shared", "shared/papers", "catalogue §")


def _files() -> list[Path]:
    out = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if (path.suffix in (".py", ".md") and path.is_file()
                and not any(p in SKIP_DIRS or p.endswith(".egg-info") for p in rel.parts)):
            out.append(path)
    return sorted(out)


def _headings(paper: str) -> tuple[set[str], set[str]]:
    text = SOURCES[paper].read_text(encoding="utf-8")
    sections, ids = set(), set()
    for title in HEADING.findall(text):
        m = re.match(rf"({_SECTION})\b", title)
        if m:
            sections.add(m.group(1))
        ids.update(re.findall(r"`([a-z0-9]+\.[\w.-]+)`", title))
    return sections, ids


def _package(rel: Path) -> str | None:
    parts = rel.parts
    for paper in PAPERS:
        if len(parts) > 1 and parts[-2] == paper or paper in parts[:-1]:
            return paper
    return None


def test_sources_files_exist_and_start_with_what_they_are():
    assert PAPERS, "the registry finds no built-in paper"
    for paper in PAPERS:
        assert SOURCES[paper] is not None, f"{paper} declares no sources file"
        text = SOURCES[paper].read_text(encoding="utf-8")
        assert text.startswith("# "), paper
        assert "arXiv" in text.split("---")[0] and "catalogue" in text.split("---")[0], paper


def test_every_sources_reference_resolves_to_a_heading_of_the_right_paper():
    headings = {paper: _headings(paper) for paper in PAPERS}
    problems, count = [], 0
    for path in _files():
        rel = path.relative_to(ROOT)
        if rel.name == "SOURCES.md" or rel.name == "test_sources.py":
            continue
        if rel == GENERATED_FINDINGS:  # copies of the claims' own `source` fields, checked there
            continue
        text = path.read_text(encoding="utf-8")
        last_explicit = None
        for m in REF.finditer(text):
            paper = m.group("paper") or _package(rel) or last_explicit
            if m.group("paper"):
                last_explicit = m.group("paper")
            line = text.count("\n", 0, m.start()) + 1
            if paper is None:
                problems.append(f"{rel}:{line}: {m.group(0)!r} names no paper")
                continue
            sections, ids = headings[paper]
            for sec in re.findall(_SECTION, m.group("chain")):
                count += 1
                if sec not in sections:
                    problems.append(f"{rel}:{line}: {sec} is not a heading of {paper}/SOURCES.md")
            for cid in re.findall(r"``?([a-z0-9]+\.[\w.-]+?)``?", m.group("chain")):
                count += 1
                if cid not in ids:
                    problems.append(f"{rel}:{line}: {cid} is not a heading of {paper}/SOURCES.md")
    assert not problems, "\n".join(problems)
    assert count > 50  # the code does cite its sources


def test_nothing_points_outside_the_repository():
    problems = []
    for path in _files():
        rel = path.relative_to(ROOT)
        if rel.name == "test_sources.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for bad in FORBIDDEN:
                if bad in line and not (bad == "catalogue §" and rel.name == "SOURCES.md"):
                    problems.append(f"{rel}:{n}: {bad!r}: {line.strip()}")
    assert not problems, "\n".join(problems)
