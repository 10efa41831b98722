"""The derivation report as one self-contained HTML file: no JavaScript, no network, math as
MathML (Core), plots as inline SVG.

Rendered from a results record (the JSON ``check`` writes) alone: the renderer formats and
plots what the run recorded and computes nothing new, so a report can be rebuilt from a stored
file. :func:`claim_section` also serves ``_repr_html_`` in Jupyter.
"""
from __future__ import annotations

import html
import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from verify.report.mathml import core_or_source, from_latex, prose
from verify.report.svg_plots import evidence_chart, figure_chart

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:72rem;margin:2rem auto;
padding:0 1rem;color:#1d1d1f;line-height:1.45}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2.5rem;border-bottom:1px solid #ddd}
h3{font-size:1rem;margin-bottom:.3rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.88rem}
td,th{border:1px solid #d0d0d0;padding:.25rem .5rem;vertical-align:top;text-align:left}
th{background:#f4f4f6}.num{text-align:right;font-variant-numeric:tabular-nums}
.v{font-weight:600;padding:.1rem .45rem;border-radius:.3rem;color:#fff}
.v-pass{background:#2b7a3d}.v-fail{background:#b3261e}.v-inconclusive{background:#8a6d00}
.v-error{background:#5b2a86}.v-skipped{background:#666}
.ok-true{color:#2b7a3d}.ok-false{color:#b3261e;font-weight:600}
.statement{background:#f7f7fb;padding:.6rem 1rem;border-left:3px solid #6b6bd6}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem}
pre{background:#f6f6f6;padding:.5rem;overflow-x:auto}
.steps li{margin:.4rem 0}.meta{color:#555;font-size:.85rem}
figure{margin:.8rem 0}svg{max-width:100%;height:auto}
math[display=block]{overflow-x:auto;max-width:100%;padding:.2rem 0}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _verdict(v: str) -> str:
    return f'<span class="v v-{_e(v)}">{_e(v)}</span>'


def short(value: Any, limit: int = 80) -> str:
    """A compact text for a stated/derived/measured value (arrays by shape and head)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, Sequence) and not isinstance(value, str):
        flat: list[Any] = []
        shape: list[int] = []
        level: Any = value
        while isinstance(level, Sequence) and not isinstance(level, str):
            shape.append(len(level))
            if not level:
                break
            level = level[0]

        def walk(v: Any) -> None:
            if isinstance(v, Sequence) and not isinstance(v, str):
                for item in v:
                    if len(flat) >= 4:
                        return
                    walk(item)
            else:
                flat.append(v)
        walk(value)
        head = ", ".join(short(v, 16) for v in flat[:4])
        dims = "x".join(map(str, shape))
        return f"[{dims}] {head}{', ...' if len(flat) >= 4 else ''}"
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _discrepancy(e: Mapping[str, Any]) -> str:
    d = e.get("discrepancy")
    if not e.get("finite", True):
        return "non-finite"
    if d is None:
        return "undecided"
    return f"{d:.2e}" if isinstance(d, (int, float)) else _e(d)


def evidence_table(evidence: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for e in evidence:
        ok = e.get("ok")
        mark = {True: "yes", False: "NO", None: "-"}[ok]
        rows.append(
            f"<tr><td>{_e(e['route'])}</td><td>{_e(e['quantity'])}</td>"
            f"<td>{_e(short(e.get('stated')))}</td><td>{_e(short(e.get('derived')))}</td>"
            f"<td>{_e(short(e.get('measured')))}</td><td class=num>{_discrepancy(e)}</td>"
            f"<td class=num>{e['tolerance']:.1e}</td><td class='ok-{str(ok).lower()}'>{mark}"
            f"</td><td>{_e(e.get('tolerance_why', ''))}</td></tr>")
    return ("<table><tr><th>route</th><th>quantity</th><th>stated</th><th>derived</th>"
            "<th>measured</th><th>discrepancy</th><th>tolerance</th><th>within</th>"
            "<th>why this tolerance</th></tr>" + "".join(rows) + "</table>")


def _step_math(step: Mapping[str, Any]) -> str:
    if step.get("mathml"):
        return core_or_source(step["mathml"], step.get("latex") or "", display=True)
    if step.get("latex"):
        return from_latex(step["latex"], display=True)
    return ""


def derivations(records: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for d in records:
        steps = "".join(f"<li>{prose(s['text'])}{_step_math(s)}</li>" for s in d["steps"])
        parts.append(f"<h4>{_e(d['title'])}</h4><ol class=steps>{steps}</ol>")
    return "".join(parts)


def figures(claim_id: str, evidence: Sequence[Mapping[str, Any]],
            figs: Mapping[str, Any]) -> str:
    out = []
    chart = evidence_chart(evidence)
    if chart:
        out.append(f"<figure role=img aria-label='evidence of {_e(claim_id)}'>{chart}"
                   "<figcaption>Each compared quantity: discrepancy in units of its "
                   "tolerance.</figcaption></figure>")
    rest = {}
    for name, value in figs.items():
        svg = figure_chart(name, value)
        if svg:
            out.append(f"<figure role=img aria-label='{_e(name)}'>{svg}"
                       f"<figcaption>{_e(name)}</figcaption></figure>")
        else:
            rest[name] = value
    if rest:
        out.append("<details><summary>figures (data)</summary><pre>"
                   f"{_e(json.dumps(rest, indent=1)[:20000])}</pre></details>")
    return "".join(out)


def reproduce_command(c: Mapping[str, Any]) -> str:
    parts = [f"python -m verify check {c['id']} --fidelity {c['fidelity']} --seed {c['seed']}"]
    if c.get("dtype", "float64") != "float64":
        parts.append(f"--dtype {c['dtype']}")
    parts += [f"--module {shlex.quote(m)}" for m in c.get("modules", ())]
    return " ".join(parts)


def claim_section(c: Mapping[str, Any]) -> str:
    """One claim's section: statement, reading, assumptions, derivations, evidence, plots,
    negative control and the command that reproduces it."""
    assumptions = "".join(
        f"<tr><td>{_e(a['name'])}</td><td>{prose(a.get('description', ''))}</td>"
        f"<td class='ok-{str(a['holds']).lower()}'>{'holds' if a['holds'] else 'FAILS'}"
        f"{' (probe)' if a.get('probe') else ''}</td><td>{_e(a.get('source', ''))}</td></tr>"
        for a in c.get("assumptions", []))
    control = c.get("negative_control")
    control_html = ""
    if control:
        state = "rejected" if control["rejected"] else "NOT rejected (no power)"
        control_html = (f"<p><b>Negative control</b> ({_e(control['description'])}): "
                        f"{state}; the planted variant's verdict was "
                        f"{_verdict(control['verdict_of_variant'])}.</p>")
    where = "inside" if c.get("inside_assumptions", True) else "OUTSIDE"
    return (
        f"<section id='{_e(c['id'])}'><h2>{_e(c['id'])}: {_e(c['title'])} "
        f"{_verdict(c['verdict'])}</h2>"
        f"<p class=meta>{_e(c['paper'])}, {_e(c['source'])} &middot; {_e(c['kind'])} "
        f"&middot; {c['seconds']:.2f} s &middot; {_e(c['fidelity'])} fidelity, "
        f"{_e(c['dtype'])}, {_e(c['device'])}, seed {c['seed']} &middot; {where} the "
        f"assumptions</p>"
        f"<p><b>Verdict:</b> {_verdict(c['verdict'])} {_e(diagnosis(c))}</p>"
        f"<h3>Statement (as the paper states it)</h3>"
        f"<div class=statement>{from_latex(c['statement'], display=True)}</div>"
        f"<h3>Reading (the toolkit's precise version)</h3><p>{prose(c['reading'])}</p>"
        + (f"<h3>Assumptions</h3><table><tr><th>assumption</th><th>meaning</th>"
           f"<th>this run</th><th>evaluated on</th></tr>{assumptions}</table>"
           if assumptions else "")
        + (f"<h3>Derivation</h3>{derivations(c['derivations'])}" if c.get("derivations")
           else "")
        + f"<h3>Evidence</h3>{evidence_table(c.get('evidence', []))}"
        + figures(c["id"], c.get("evidence", []), c.get("figures", {}))
        + control_html
        + (f"<details><summary>error</summary><pre>{_e(c['error'])}</pre></details>"
           if c.get("error") else "")
        + f"<p><b>Reproduce:</b> <code>{_e(reproduce_command(c))}</code></p></section>")


def claim_card(d: Mapping[str, Any]) -> str:
    """A claim before any run (``Claim.describe()``): statement, reading, assumptions."""
    assumptions = "".join(f"<li><b>{_e(a['name'])}</b>: {prose(a['description'])}</li>"
                          for a in d["assumptions"])
    return (f"<div><h3>{_e(d['id'])}: {_e(d['title'])}</h3>"
            f"<p class=meta>{_e(d['paper'])}, {_e(d['source'])} &middot; {_e(d['kind'])}</p>"
            f"<div class=statement>{from_latex(d['statement'], display=True)}</div>"
            f"<p><b>Reading:</b> {prose(d['reading'])}</p>"
            + (f"<p><b>Assumptions</b></p><ul>{assumptions}</ul>" if assumptions else "")
            + f"<p><b>Negative control:</b> {_e(d['negative_control'])}</p></div>")


def diagnosis(c: Mapping[str, Any]) -> str:
    """The claim's one-sentence diagnosis (computed for records stored before it existed)."""
    from verify.diagnosis import diagnose
    return c.get("diagnosis") or diagnose(c)


def render_html(record: Mapping[str, Any], *, title: str = "Claim verification report") -> str:
    """The whole report for a results record (``schema_version`` 1)."""
    claims = record["claims"]
    run = record.get("run", {})
    summary = "".join(
        f"<tr><td><a href='#{_e(c['id'])}'>{_e(c['id'])}</a></td><td>{_e(c['paper'])}</td>"
        f"<td>{_verdict(c['verdict'])}</td><td>{_e(diagnosis(c))}</td>"
        f"<td class=num>{c['seconds']:.2f} s</td></tr>" for c in claims)
    counts = ", ".join(f"{n} {v}" for v, n in record.get("summary", {}).items() if n)
    versions = ", ".join(f"{k} {v}" for k, v in run.get("versions", {}).items() if v)
    git = run.get("git") or {}
    meta = (f"<p class=meta>Run {_e(run.get('started', ''))} &ndash; "
            f"{_e(run.get('finished', ''))}; fidelity {_e(run.get('fidelity', ''))}, "
            f"dtype {_e(run.get('dtype', ''))}, seed {_e(run.get('seed', ''))}; device "
            f"{_e((run.get('device') or {}).get('type', ''))}; code "
            f"{_e(git.get('revision', 'unknown'))}{' (dirty)' if git.get('dirty') else ''}"
            f"; {_e(versions)}</p>")
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width, initial-scale=1'>"
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1>{meta}<p>{len(claims)} claims: {_e(counts)}.</p>"
        "<table><tr><th>claim</th><th>paper</th><th>verdict</th><th>diagnosis</th>"
        f"<th>time</th></tr>{summary}</table>"
        + "".join(claim_section(c) for c in claims)
        + "</body></html>\n")
