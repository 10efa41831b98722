"""The findings page: per paper, the claims that failed and those that were inconclusive,
each with its diagnosis, the reading it used, the smallest failing (or undecided) case and
a command that reruns it; the verdict counts per paper at the top.

Rendered from a results record alone, as the report is (:mod:`verify.report.html`): the
decisive evidence item is the one :func:`verify.diagnosis.decisive_item` picks, the one the
diagnosis quotes. ``findings.html`` has no script and uses the report's CSS; ``findings.md``
says the same in Markdown.
"""
from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from verify.diagnosis import decisive_item
from verify.references import contradicts, summary_text
from verify.report.html import (_e, _verdict, diagnosis, not_shown_html, page_head,
                                 paper_size, reading_verdict, readings, reproduce_command,
                                 run_meta, short)
from verify.report.markdown import not_shown_markdown
from verify.report.mathml import prose, prose_markdown

TITLE = "Findings"
#: The verdicts counted per paper, in this order (error and skipped only where they occur).
VERDICTS = ("pass", "fail", "inconclusive", "error", "skipped")
#: The verdicts counted even where no claim has them.
ALWAYS = ("pass", "fail", "inconclusive")
#: The lists of the page: (verdict, or "contradicted": a verdict its paper-size reference
#: contradicts, whatever it is; heading).
LISTS = (("contradicted", "Toy size and paper size disagree"), ("fail", "Failing"),
         ("inconclusive", "Inconclusive"))


def listed(claims: Sequence[Mapping[str, Any]], key: str) -> list[Mapping[str, Any]]:
    """The claims of one list of the page: each claim in one list only."""
    if key == "contradicted":
        return [c for c in claims if contradicts(c)]
    return [c for c in claims if c["verdict"] == key and not contradicts(c)]


def counterexample(c: Mapping[str, Any]) -> dict[str, Any] | None:
    """The decisive item of a failing or inconclusive claim record: ``{"quantity",
    "parameters"}`` (its case), or None (no such item, or another verdict)."""
    item = decisive_item(c)
    if item is None:
        return None
    return {"quantity": str(item.get("quantity", "")),
            "parameters": dict(item.get("parameters") or {})}


def _override(value: Any, declared: Any) -> Any:
    """``value`` as a ``--set`` value for a parameter declared as ``declared`` (the run's
    value): of the same kind, or None when it is not one. Where the claim takes a sequence,
    a sequence of values the run had, or one of them (a one-item tuple): a case of the run
    (``M = 5`` of ``M = [5, 7, 8]``), not a count that shares the name."""
    if isinstance(declared, bool) or isinstance(value, bool):
        return value if isinstance(declared, bool) and isinstance(value, bool) else None
    if isinstance(declared, int) and isinstance(value, int):
        return value if value >= min(declared, 1) else None
    if isinstance(declared, float) and isinstance(value, (int, float)):
        return value if math.isfinite(value) else None
    if isinstance(declared, str) and isinstance(value, str):
        return value
    if isinstance(declared, (list, tuple)) and declared:
        had = [_plain(d) for d in declared]
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if not items or any(_plain(v) not in had for v in items):
            return None
        converted = [_override(v, declared[0]) for v in items]
        return tuple(converted) if all(v is not None for v in converted) else None
    return None


def _plain(value: Any) -> Any:
    return tuple(map(_plain, value)) if isinstance(value, (list, tuple)) else value


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """``(dotted path, value)`` of each leaf of ``value`` under ``path`` (a dict's keys
    extend the path, as ``--set a.b=v`` names them)."""
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}")
    else:
        yield path, value


def _at(parameters: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    """(found, value) of the parameter at a dotted ``path``."""
    node: Any = parameters
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return False, None
        node = node[key]
    return True, node


def _nested(parameters: Mapping[str, Any], name: str) -> list[str]:
    """The dotted paths ``a.name`` of the dict parameters ``a`` with a key ``name`` (one
    level down: a deeper key of the same name is some other setting's)."""
    return [f"{key}.{name}" for key, value in parameters.items()
            if isinstance(value, Mapping) and name in value]


def overrides(c: Mapping[str, Any], parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The ``--set`` options that narrow the run to a case: each of the case's parameters
    that names a parameter of the run, of the declared kind and with another value. A name
    is a parameter (``n``), a dotted path into a dict parameter (``training.K``, as a stress
    dimension names it), a dict (``training: {K: 64}``: each of its entries) or a key of
    exactly one dict parameter (``K`` for ``training.K``); the options use the dotted path."""
    declared = c.get("parameters") or {}
    out = {}
    for name, value in parameters.items():
        for path, leaf in _leaves(value, str(name)):
            found, run_value = _at(declared, path)
            if not found:
                where = [] if "." in path else _nested(declared, path)
                if len(where) != 1:
                    continue  # no parameter of the run, or several: no option names it
                path, (_, run_value) = where[0], _at(declared, where[0])
            v = _override(leaf, run_value)
            if v is not None and _plain(v) != _plain(run_value):
                out[path] = v
    return out


def run_overrides(c: Mapping[str, Any]) -> dict[str, Any]:
    """The ``--set`` options the run itself had: each leaf of its recorded parameters that
    differs from the claim's declared ones at its fidelity (a ``check --set``); {} for a
    claim the registry does not know."""
    from verify.evidence import to_json_value
    from verify.registry import UnknownClaim, get, load_builtin_claims

    try:
        claim = get(str(c["id"]))
    except UnknownClaim:
        load_builtin_claims()
        try:
            claim = get(str(c["id"]))
        except UnknownClaim:
            return {}
    defaults = to_json_value(claim.parameters.get(str(c.get("fidelity")), {}))
    out = {}
    for name, value in (c.get("parameters") or {}).items():
        for path, leaf in _leaves(value, str(name)):
            found, default = _at(defaults, path)
            if not found or _plain(default) != _plain(leaf):
                out[path] = leaf
    return out


def finding_command(c: Mapping[str, Any], parameters: Mapping[str, Any] | None = None) -> str:
    """The report's reproduce line for ``c``: the run's own ``--set`` options
    (:func:`run_overrides`) and those narrowing it to the case (:func:`overrides`)."""
    from verify.stress import _literal  # the literal form stress's reproduce lines use

    sets = {**run_overrides(c), **overrides(c, parameters or {})}
    return " ".join([reproduce_command(c), *("--set " + shlex.quote(f"{k}={_literal(v)}")
                                            for k, v in sets.items())])


def case_text(parameters: Mapping[str, Any]) -> str:
    """A case's parameters as a person reads them: ``n = 3, K = 1, F = [0, 1, 2]``."""
    def text(v: Any) -> str:
        if isinstance(v, (list, tuple)) and any(isinstance(x, str) for x in v):
            quoted = "[" + ", ".join(json.dumps(x) if isinstance(x, str) else short(x, 40)
                                     for x in v) + "]"  # strings with commas stay readable
            return quoted if len(quoted) <= 100 else quoted[:96] + " ..."
        return short(v, 60)
    return ", ".join(f"{k} = {text(v)}" for k, v in parameters.items())


def paper_counts(claims: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """``{paper: {verdict: n}}`` in the order the papers first occur."""
    out: dict[str, dict[str, int]] = {}
    for c in claims:
        counts = out.setdefault(str(c.get("paper", "")), dict.fromkeys(VERDICTS, 0))
        counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
    return out


def _columns(counts: Mapping[str, Mapping[str, int]]) -> list[str]:
    """pass, fail, inconclusive always; the other verdicts where some paper has one."""
    seen = {v for per in counts.values() for v, n in per.items() if n}
    return [v for v in VERDICTS if v in ALWAYS or v in seen] + sorted(seen - set(VERDICTS))


def _counts_text(counts: Mapping[str, int]) -> str:
    total = sum(counts.values())
    shown = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS
                      if v in ALWAYS or counts.get(v))
    return f"{total} claim{'s' if total != 1 else ''}: {shown}"


def _none_text(claims: Sequence[Mapping[str, Any]], where: str) -> str:
    """The sentence for a paper (or run) where nothing failed or nothing was inconclusive."""
    fails = sum(c["verdict"] == "fail" for c in claims)
    unsure = sum(c["verdict"] == "inconclusive" for c in claims)
    if not fails and not unsure:
        return f"No claim {where}failed and none was inconclusive."
    if not fails:
        return f"No claim {where}failed."
    return ""


#: The tag a claim carries when its verdict depends on the size it trains at (the papers'
#: experiments): such a claim is listed in the size table even before it has a reference.
SIZED_TAG = "training"


def size_rows(claims: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Per claim tagged :data:`SIZED_TAG` or holding a paper-size reference, which size decided
    its verdict: the run's own (toy) verdict beside the reference's, or that no paper-size run
    has been made.

    >>> size_rows([{"id": "a.fig", "verdict": "pass", "tags": ["training"], "fidelity": "quick",
    ...             "reference": {"verdict": "fail", "fidelity": "full", "made": "2026-12-07",
    ...                           "revision": "abc1234", "stale": False, "cpu_seconds": 528.0,
    ...                           "sizes": "M=71, K=2048"}}])[0]["decided"]
    'paper size (toy size disagrees)'
    """
    rows = []
    for c in claims:
        ref = c.get("reference")
        if not isinstance(ref, Mapping) and SIZED_TAG not in c.get("tags", ()):
            continue
        row = {"id": c["id"], "toy": f"{c['verdict']} ({c.get('fidelity', '')})"}
        if isinstance(ref, Mapping):
            cpu, stored = ref.get("cpu_seconds"), ref.get("stored_seconds")
            row |= {"paper": f"{ref['verdict']} ({ref['made']}, rev "
                             f"{(ref.get('revision') or 'none')[:7]}"
                             f"{', stale' if ref.get('stale') else ''})",
                    "sizes": str(ref.get("sizes") or ""),
                    # a run resumed from stored training points: their seconds too
                    "cpu": ("" if cpu is None else f"{float(cpu):.0f}")
                           + (f" + {float(stored):.0f} s of stored runs" if stored else ""),
                    "decided": ("paper size, by a reference made before the claim code last "
                                "changed" if ref.get("stale") else
                                "paper size (toy size disagrees)" if contradicts(c) else
                                "paper size")}
        else:
            row |= {"paper": "no run yet", "sizes": "", "cpu": "",
                    "decided": "toy size only"}
        rows.append(row)
    return rows


_SIZE_HEAD = ("claim", "toy size", "paper size", "its sizes", "CPU-s", "decided at")
_SIZE_KEYS = ("id", "toy", "paper", "sizes", "cpu", "decided")
SIZE_INTRO = ("The claims that train, and any claim with a "
              "paper-size reference (`verify/references/`), with this run's verdict beside the "
              "reference's.")


def size_table_markdown(claims: Sequence[Mapping[str, Any]]) -> list[str]:
    """:func:`size_rows` as a Markdown table (no lines where there are no rows)."""
    rows = size_rows(claims)
    if not rows:
        return []
    return ["| " + " | ".join(_SIZE_HEAD) + " |", "|" + "---|" * len(_SIZE_HEAD),
            *("| " + " | ".join(("`" + r[k] + "`") if k == "id" else r[k].replace("|", "/")
                                for k in _SIZE_KEYS) + " |" for r in rows)]


def _slug(text: str) -> str:
    return "paper-" + (re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "none")


def _entry(c: Mapping[str, Any]) -> dict[str, Any]:
    """What the page says about one failing or inconclusive claim."""
    case = counterexample(c)
    params = case["parameters"] if case else {}
    where = "" if c.get("inside_assumptions", True) else (
        "run outside its assumptions ("
        + ", ".join(a["name"] for a in c.get("assumptions", [])
                    if not a.get("holds") and not a.get("probe")) + ")")
    return {"case": case, "case_text": case_text(params), "command": finding_command(c, params),
            "diagnosis": diagnosis(c), "where": where,
            "holds_under": [r for r in readings(c) if reading_verdict(r) == "pass"]}


def _case_label(c: Mapping[str, Any]) -> str:
    return "Minimal counterexample" if c["verdict"] == "fail" else "Undecided case"


# --- HTML -----------------------------------------------------------------------------------

def _html_item(c: Mapping[str, Any]) -> str:
    f = _entry(c)
    case = f["case"]
    if case is None:
        case_html = "no single evidence item decides it (see the diagnosis)"
    else:
        case_html = _e(f["case_text"] or f"no parameters recorded, for {case['quantity']}")
    return (f"<li id='{_e(c['id'])}'><h4><a href='index.html#{_e(c['id'])}'>{_e(c['id'])}</a>: "
            f"{_e(c.get('title', ''))} {_verdict(c['verdict'])}</h4>"
            f"<p class=meta>{_e(c.get('source', ''))}"
            + (f" &middot; {_e(f['where'])}" if f["where"] else "") + "</p>"
            f"<p><b>Diagnosis:</b> {_e(f['diagnosis'])}</p>"
            + paper_size(c)
            + f"<p><b>Reading:</b> {prose(str(c.get('reading', '')))}</p>"
            + "".join(f"<p><b>Holds under reading {_e(r.get('name', ''))}:</b> "
                      f"{prose(str(r.get('description', '')))}</p>" for r in f["holds_under"])
            + f"<p><b>{_case_label(c)}:</b> {case_html}</p>"
            f"<p><b>Reproduce:</b> <code>{_e(f['command'])}</code></p></li>")


def render_findings_html(record: Mapping[str, Any], *, title: str = TITLE) -> str:
    """The findings page for a results record, as one HTML file without script."""
    claims = record["claims"]
    counts = paper_counts(claims)
    columns = _columns(counts)
    rows = "".join(
        f"<tr><td><a href='#{_slug(p)}'>{_e(p)}</a></td>"
        f"<td class=num>{sum(per.values())}</td>"
        + "".join(f"<td class=num>{per.get(v, 0)}</td>" for v in columns) + "</tr>"
        for p, per in counts.items())
    table = ("<table><tr><th>paper</th><th>claims</th>"
             + "".join(f"<th>{_verdict(v)}</th>" for v in columns) + f"</tr>{rows}</table>")
    total = paper_counts([{**c, "paper": ""} for c in claims]).get("", {})
    none = _none_text(claims, "")
    parts = [page_head(title), f"<h1>{_e(title)}</h1>", run_meta(record.get("run", {})),
             f"<p>{_e(_counts_text(total))}. Every claim's evidence, derivations and "
             "negative control: <a href=index.html>the full report</a>.</p>",
             not_shown_html(record), table]
    if none:
        parts.append(f"<p><b>{_e(none)}</b></p>")
    for paper in counts:
        mine = [c for c in claims if str(c.get("paper", "")) == paper]
        parts.append(f"<section id='{_slug(paper)}'><h2>{_e(paper)}</h2>"
                     f"<p class=meta>{_e(_counts_text(counts[paper]))}</p>")
        for key, heading in LISTS:
            items = listed(mine, key)
            if items:
                parts.append(f"<h3>{heading} ({len(items)})</h3><ol>"
                             + "".join(_html_item(c) for c in items) + "</ol>")
        paper_none = _none_text(mine, "of this paper ")
        if paper_none:
            parts.append(f"<p>{_e(paper_none)}</p>")
        parts.append("</section>")
    rows = size_rows(claims)
    if rows:
        parts.append("<section id=sizes><h2>Which size decided each verdict</h2>"
                     f"<p>{_e(SIZE_INTRO.replace('`', ''))}</p><table><tr>"
                     + "".join(f"<th>{_e(h)}</th>" for h in _SIZE_HEAD) + "</tr>"
                     + "".join("<tr>" + "".join(
                         f"<td{' class=num' if k == 'cpu' else ''}>{_e(r[k])}</td>"
                         for k in _SIZE_KEYS) + "</tr>" for r in rows)
                     + "</table></section>")
    return "".join(parts) + "</body></html>\n"


# --- Markdown -------------------------------------------------------------------------------

def _md_item(c: Mapping[str, Any]) -> list[str]:
    f = _entry(c)
    case = f["case"]
    if case is None:
        case_md = "no single evidence item decides it (see the diagnosis)"
    else:
        case_md = f["case_text"] or f"no parameters recorded, for {case['quantity']}"
    where = f" · {f['where']}" if f["where"] else ""
    return [f"#### {c['id']}: {c.get('title', '')} — **{c['verdict']}**", "",
            f"{c.get('source', '')}{where}", "",
            f"- **Diagnosis:** {f['diagnosis']}",
            *([f"- **Paper size:** {summary_text(c['reference'], label=False)}"]
              if c.get("reference")
              else []),
            f"- **Reading:** {prose_markdown(str(c.get('reading', '')))}",
            *(f"- **Holds under reading {r.get('name', '')}:** "
              f"{prose_markdown(str(r.get('description', '')))}" for r in f["holds_under"]),
            f"- **{_case_label(c)}:** {case_md}",
            f"- **Reproduce:** `{f['command']}`", ""]


def render_findings_markdown(record: Mapping[str, Any], *, title: str = TITLE) -> str:
    """The findings page as Markdown (the same content as :func:`render_findings_html`)."""
    claims = record["claims"]
    counts = paper_counts(claims)
    columns = _columns(counts)
    run = record.get("run", {})
    git = run.get("git") or {}
    total = paper_counts([{**c, "paper": ""} for c in claims]).get("", {})
    lines = [f"# {title}", "",
             f"Run {run.get('started', '')} – {run.get('finished', '')}; fidelity "
             f"{run.get('fidelity', '')}, dtype {run.get('dtype', '')}, seed "
             f"{run.get('seed', '')}; code {git.get('revision', 'unknown')}"
             f"{' (dirty)' if git.get('dirty') else ''}. The full report: `index.html` / "
             "`report.md`.", "",
             f"{_counts_text(total)}.", "", *not_shown_markdown(record),
             "| paper | claims | " + " | ".join(columns) + " |",
             "|---|---|" + "---|" * len(columns)]
    lines += [f"| {p} | {sum(per.values())} | " + " | ".join(str(per.get(v, 0))
                                                              for v in columns) + " |"
              for p, per in counts.items()]
    lines.append("")
    none = _none_text(claims, "")
    if none:
        lines += [f"**{none}**", ""]
    for paper in counts:
        mine = [c for c in claims if str(c.get("paper", "")) == paper]
        lines += [f"## {paper}", "", _counts_text(counts[paper]), ""]
        for key, heading in LISTS:
            items = listed(mine, key)
            if items:
                lines += [f"### {heading} ({len(items)})", ""]
                for c in items:
                    lines += _md_item(c)
        paper_none = _none_text(mine, "of this paper ")
        if paper_none:
            lines += [paper_none, ""]
    sizes = size_table_markdown(claims)
    if sizes:
        lines += ["## Which size decided each verdict", "", SIZE_INTRO, "", *sizes, ""]
    return "\n".join(lines) + "\n"
