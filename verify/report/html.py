"""The derivation report as one self-contained HTML file: no JavaScript, no network, math as
MathML (Core), plots as inline SVG.

Rendered from a results record (the JSON ``check`` writes) alone: the renderer formats and
plots what the run recorded and computes nothing new, so a report can be rebuilt from a stored
file. :func:`claim_section` also serves ``_repr_html_`` in Jupyter.
"""
from __future__ import annotations

import html
import json
import math
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from verify.references import summary_text
from verify.report.math_breaks import width
from verify.report.mathml import LINE_EM, core_or_source, fitted, from_latex, prose
from verify.report.svg_plots import draw_figure, evidence_chart
from verify.report.trend_plots import caption as trend_caption
from verify.report.trend_plots import trend_figures, trend_grid, trend_rows
from verify.report.value_cells import exact_cell, is_large, matrices, matrix_shape

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:80rem;margin:2rem auto;
padding:0 1rem;color:#1d1d1f;line-height:1.45}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2.5rem;border-bottom:1px solid #ddd}
h3{font-size:1rem;margin-bottom:.3rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.88rem}
td,th{border:1px solid #d0d0d0;padding:.25rem .5rem;vertical-align:top;text-align:left}
th{background:#f4f4f6}.num{text-align:right;font-variant-numeric:tabular-nums}
.v{font-weight:600;padding:.1rem .45rem;border-radius:.3rem;color:#fff}
.v-pass{background:#2b7a3d}.v-fail{background:#b3261e}.v-inconclusive{background:#8a6d00}
.v-error{background:#5b2a86}.v-skipped{background:#666}
.ok-true{color:#2b7a3d}.ok-false{color:#b3261e;font-weight:600}.ok-probe{color:#555}
.statement{background:#f7f7fb;padding:.6rem 1rem;border-left:3px solid #6b6bd6}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem}
pre{background:#f6f6f6;padding:.5rem;overflow-x:auto}
.steps li{margin:.4rem 0}.meta{color:#555;font-size:.85rem}
pre.latex{max-height:12rem;overflow:auto;white-space:pre-wrap;overflow-wrap:anywhere;
margin:.3rem 0}
details.derivation{margin:.3rem 0;padding:.2rem .6rem;border:1px solid #e2e2ea;
border-radius:.3rem}details.derivation>summary{cursor:pointer}
table.evidence{width:100%;table-layout:fixed}
table.evidence td{overflow-wrap:break-word}
table.evidence td.q{overflow-wrap:anywhere}
col.c-route{width:7%}col.c-q{width:25%}col.c-v{width:14.5%}col.c-n{width:8%}col.c-ok{width:5%}
table.evidence th{overflow-wrap:normal;font-size:.82rem}
table.evidence tbody.item{border-top:2px solid #c8c8d0}
tr.why td{border-top:none;color:#555;font-size:.8rem;padding-top:0}
tr.why td:first-child{border-right:none}
.cellmath{overflow-x:auto;overflow-y:hidden;max-width:100%;padding:.25rem 0}
.cellmath math{font-size:1.05em;math-style:normal}
td details summary{font-size:.75rem;color:#555;cursor:pointer}
figure{margin:.8rem 0}svg{max-width:100%;height:auto}
.figure-problem{color:#b3261e}
pre.data{max-height:24rem;overflow:auto;white-space:pre-wrap;overflow-wrap:anywhere}
math{font-family:"STIX Two Math","Latin Modern Math","Cambria Math","DejaVu Math TeX Gyre",math}
math[display=block]{overflow-x:auto;overflow-y:hidden;max-width:100%;padding:.4rem 0}
div.formula{padding:.4rem 0 .4rem 2em;text-indent:-2em;line-height:2}
div.formula math,span.formula math{text-indent:0}
.formula .mtext{font-family:"STIX Two Math","Latin Modern Math","Cambria Math",
"DejaVu Math TeX Gyre",serif}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _verdict(v: str) -> str:
    return f'<span class="v v-{_e(v)}">{_e(v)}</span>'


class RenderError(RuntimeError):
    """A part of the report that failed to render, named: the claim, the derivation and the
    step (the original exception is its ``__cause__``)."""


#: A formula with a longer LaTeX source is shown as that source in a scrolling box: typeset,
#: it would be several screens tall, and its MathML some 7 times the size of its LaTeX (the
#: few such derivation steps were a third of a report's size).
STEP_LATEX_MAX = 4000


def _number_text(x: Any) -> str:
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def _flatten(value: Any) -> tuple[list[int], list[Any]]:
    shape: list[int] = []
    level: Any = value
    while isinstance(level, Sequence) and not isinstance(level, str):
        shape.append(len(level))
        if not level:
            break
        level = level[0]
    flat: list[Any] = []

    def walk(v: Any) -> None:
        if isinstance(v, Sequence) and not isinstance(v, str):
            for item in v:
                walk(item)
        else:
            flat.append(v)
    walk(value)
    return shape, flat


#: Lists with at most this many entries are shown whole.
LIST_WHOLE = 6


def short(value: Any, limit: int = 80) -> str:
    """A value as a person reads it: numbers to 6 significant digits, short lists whole,
    longer ones (and arrays) by their shape, range and first entries, recorded summaries
    (``shape``/``max_abs``/``fro``, fits with an interval, ...) as labelled numbers.

    >>> short([0.5, 0.25])
    '[0.5, 0.25]'
    >>> short(list(range(10)))
    '10 values in [0, 9]: 0, 1, 2, ...'
    >>> short({"shape": [115, 4], "max_abs": 2.0, "fro": 13.5})
    'array 115x4, max |x| 2, Frobenius norm 13.5'
    """
    if value is None:
        return ""
    if isinstance(value, Mapping):
        if "latex" in value:
            return str(value.get("sympy") or value["latex"])
        if "shape" in value:
            dims = "x".join(map(str, value["shape"])) or "scalar"
            rest = [f"max |x| {_number_text(value['max_abs'])}" if "max_abs" in value else "",
                    f"Frobenius norm {_number_text(value['fro'])}" if "fro" in value else ""]
            rest += [f"{k} {short(v, 40)}" for k, v in value.items()
                     if k not in ("shape", "max_abs", "fro")]
            return ", ".join([f"array {dims}", *filter(None, rest)])
        return "; ".join(f"{k} {short(v, 60)}" for k, v in value.items())
    if isinstance(value, (float, bool)):
        return _number_text(value)
    if isinstance(value, Sequence) and not isinstance(value, str):
        shape, flat = _flatten(value)
        if len(flat) <= LIST_WHOLE:  # small: whole, nested as recorded ([[1, -1], [1, -1]])
            if all(not isinstance(v, Sequence) or isinstance(v, str) for v in value):
                return "[" + ", ".join(short(v, 16) for v in value) + "]"
            return "[" + ", ".join(short(v, 40) for v in value) + "]"
        numbers = [v for v in flat if isinstance(v, (int, float)) and not isinstance(v, bool)]
        dims = "x".join(map(str, shape))
        head = ", ".join(short(v, 16) for v in flat[:3]) + (", ..." if len(flat) > 3 else "")
        what = f"{len(flat)} values" if len(shape) == 1 else f"array {dims}"
        if numbers and len(numbers) == len(flat):
            return (f"{what} in [{_number_text(min(numbers))}, {_number_text(max(numbers))}]: "
                    f"{head}")
        return f"{what}: {head}"
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def exact_parts(value: Any) -> tuple[str, str] | None:
    """For an exact value (``{"latex": ...}``): (LaTeX to typeset, text before it); a matrix
    larger than :data:`MATRIX_MAX` gives its shape and a few entries instead of all of them.
    None for other values."""
    if not (isinstance(value, Mapping) and isinstance(value.get("latex"), str)):
        return None
    latex = value["latex"]
    found = matrices(latex)
    if len(found) == 1 and is_large(latex):
        rows = found[0]
        entries = [e for r in rows for e in r]
        label = f"{len(rows)}x{max(len(r) for r in rows)} matrix, "
        if len(set(entries)) == 1:
            return entries[0], label + "every entry "
        return ", ".join(entries[:4]) + r", \dots", label + "entries "
    return latex, ""


def _latex_box(what: str, latex: str) -> str:
    return (f"<div class=big><div class=meta>{_e(what)}</div>"
            f"<pre class=latex>{_e(latex)}</pre></div>")


def value_cell(value: Any, same_as: Any = None) -> str:
    """HTML for a stated/derived/measured value: exact values typeset, broken over lines or
    summarised to fit their cell (:func:`verify.report.value_cells.exact_cell`), others
    summarised as text; an exact value equal to ``same_as`` (the stated value, for the
    derived one) is named, not repeated."""
    if exact_parts(value) is None:
        return _e(short(value))
    if isinstance(same_as, Mapping) and same_as.get("latex") == value["latex"]:
        return "<span class=meta>= stated</span>"
    return exact_cell(value["latex"])


def compared(e: Mapping[str, Any]) -> tuple[str, str]:
    """The discrepancy and tolerance of an evidence item as printed: with the digits that
    keep their comparison as it is (:func:`verify.results.compared_texts`)."""
    from verify.results import compared_texts

    tol, d = e["tolerance"], e.get("discrepancy")
    tol_f = float(tol) if isinstance(tol, (int, float)) else None
    if not e.get("finite", True):
        d_text = "non-finite"
    elif d is None:
        d_text = "undecided"
    elif isinstance(d, (int, float)) and not isinstance(d, bool) and tol_f is not None \
            and math.isfinite(d) and math.isfinite(tol_f):
        d_text, t_text = compared_texts(float(d), tol_f)
        return d_text, ("0 (exact)" if tol_f == 0 else t_text)
    else:
        d_text = str(d)
    if tol_f is None:
        return d_text, str(tol)
    return d_text, ("0 (exact)" if tol_f == 0 else f"{tol_f:.2e}")


def _discrepancy(e: Mapping[str, Any]) -> str:
    return compared(e)[0]


def evidence_table(evidence: Sequence[Mapping[str, Any]]) -> str:
    """One row per compared item, and under it a line with why its tolerance is what it is
    (and the item's note): the table fits a 1400 px window, long texts wrap."""
    rows = []
    for e in evidence:
        ok = e.get("ok")
        mark = {True: "yes", False: "NO", None: "-"}[ok]
        d_text, t_text = compared(e)
        stated, derived, measured = (value_cell(e.get(k), e.get("stated") if k == "derived"
                                                else None)
                                     for k in ("stated", "derived", "measured"))
        why = e.get("tolerance_why", "")
        note = e.get("note")
        second = (f"<b>tolerance:</b> {_e(why)}" if why else "") + (
            f"{' &middot; ' if why else ''}<b>note:</b> {_e(note)}" if note else "")
        rows.append(
            f"<tbody class=item><tr><td>{_e(e['route'])}</td><td class=q>{_e(e['quantity'])}"
            f"</td><td>{stated}</td><td>{derived}</td><td>{measured}</td>"
            f"<td class=num>{_e(d_text)}</td>"
            f"<td class=num>{_e(t_text)}</td><td class='ok-{str(ok).lower()}'>{mark}</td></tr>"
            + (f"<tr class=why><td></td><td colspan=7>{second}</td></tr>" if second else "")
            + "</tbody>")
    return ("<table class=evidence><colgroup><col class=c-route><col class=c-q><col class=c-v>"
            "<col class=c-v><col class=c-v><col class=c-n><col class=c-n><col class=c-ok>"
            "</colgroup><thead><tr><th>route</th><th>quantity</th><th>stated</th>"
            "<th>derived</th><th>measured</th><th>discrepancy</th><th>tolerance</th>"
            "<th>within</th></tr></thead>" + "".join(rows) + "</table>")


def _step_math(step: Mapping[str, Any]) -> str:
    latex = step.get("latex") or ""
    if latex and is_large(latex):
        rows, cols = matrix_shape(latex)
        return _latex_box(f"a {rows}x{cols} matrix, shown as its LaTeX", latex)
    if len(latex) > STEP_LATEX_MAX:
        return _latex_box(f"a long expression ({len(latex)} characters), shown as its LaTeX",
                          latex)
    if step.get("mathml") and width(step["mathml"]) <= LINE_EM:
        return core_or_source(step["mathml"], latex, display=True)
    if not latex:
        return ""
    # too wide for one line: the LaTeX's MathML, which can be cut at its break points
    shown = fitted(latex, display=True, width_em=LINE_EM)
    return shown.html if shown.fits else _latex_box(
        "too wide to typeset at this width, shown as its LaTeX", latex)


def derivation(d: Mapping[str, Any], shown_in: str | None = None) -> str:
    """A derivation folded: a ``<details>`` whose summary is its title and step count; one
    already shown in the section of claim ``shown_in`` ("" for this claim's) is that title,
    count and a link to it."""
    n = len(d["steps"])
    count = f"{n} step{'s' if n != 1 else ''}"
    if shown_in is not None:
        where = (f"<a href='#{_e(shown_in)}'>{_e(shown_in)}</a>" if shown_in
                 else "this claim's derivations above")
        return (f"<p class=derivation><b>{_e(d['title'])}</b> <span class=meta>({count}): the "
                f"same derivation as in {where}</span></p>")
    steps = []
    for i, s in enumerate(d["steps"], 1):
        try:
            steps.append(f"<li>{_e(s['text'])}{_step_math(s)}</li>")
        except Exception as exc:  # noqa: BLE001 - named and re-raised
            raise RenderError(f"derivation {d.get('title')!r}, step {i} "
                              f"({str(s.get('text', ''))[:60]!r}): {exc!r}") from exc
    return (f"<details class=derivation><summary><b>{_e(d['title'])}</b> "
            f"<span class=meta>({count})</span></summary>"
            f"<ol class=steps>{''.join(steps)}</ol></details>")


def derivations(records: Sequence[Mapping[str, Any]], claim_id: str = "",
                shown: dict[str, str] | None = None) -> str:
    """The derivations of claim ``claim_id``, each shown once: one repeated in this claim,
    or already shown in another claim's section (``shown``: ``{derivation's JSON: claim
    id}``, updated), is linked to instead (several claims share a derivation)."""
    shown = {} if shown is None else shown
    here: set[str] = set()
    out = []
    for d in records:
        key = json.dumps(d, sort_keys=True, default=str)
        if key in here:
            out.append(derivation(d, ""))
        elif key in shown:
            out.append(derivation(d, shown[key]))
        else:
            shown[key] = claim_id
            out.append(derivation(d))
        here.add(key)
    return "".join(out)


def figures(claim_id: str, evidence: Sequence[Mapping[str, Any]],
            figs: Mapping[str, Any]) -> str:
    out = []
    chart = evidence_chart(evidence)
    if chart:
        out.append(f"<figure role=img aria-label='evidence of {_e(claim_id)}'>{chart}"
                   "<figcaption>Each compared quantity: discrepancy in units of its "
                   "tolerance (the dashed line is the tolerance; exact agreement is drawn at "
                   "the left edge).</figcaption></figure>")
    trends = trend_figures(figs)
    if trends:
        out.append(trends_html(claim_id, trends))
    rest = {}
    for name, value in figs.items():
        if name in trends and trend_grid(trends)[0]:
            continue
        svg, problem = draw_figure(name, value)
        if svg:
            caption = ("" if isinstance(value, Mapping) and "kind" in value  # titled inside
                       else f"<figcaption>{_e(name)}</figcaption>")
            out.append(f"<figure role=img aria-label='{_e(name)}'>{svg}{caption}</figure>")
        else:
            if problem:
                out.append(f"<p class=figure-problem>{_e(name)}: {_e(problem)}</p>")
            rest[name] = value
    if rest:
        text = data_text(rest)
        cut = (f"\n... (the first {DATA_MAX} of {len(text)} characters; all of them are in "
               "results.json)" if len(text) > DATA_MAX else "")
        out.append("<details><summary>figures (data)</summary><pre class=data>"
                   f"{_e(text[:DATA_MAX] + cut)}</pre></details>")
    return "".join(out)


def trends_html(claim_id: str, trends: Mapping[str, Mapping[str, Any]]) -> str:
    """A claim's error trends (:mod:`verify.report.trend_plots`): their grid of log-log
    panels and, folded, the table of every trend's fitted and stated order; the problem in
    the grid's place when it cannot be drawn (the trends then stay among the data)."""
    svg, problem = trend_grid(trends)
    if svg is None:
        return f"<p class=figure-problem>error trends: {_e(problem)}</p>"
    rows = "".join(f"<tr><td>{_e(name)}</td><td class=num>{_e(fitted)}</td>"
                   f"<td class=num>{_e(stated)}</td><td class=num>{_e(kept)}</td></tr>"
                   for name, fitted, stated, kept in trend_rows(trends))
    return (f"<figure role=img aria-label='error trends of {_e(claim_id)}'>{svg}"
            f"<figcaption>{_e(trend_caption(trends))}</figcaption></figure>"
            f"<details><summary>fitted and stated orders of the {len(trends)} error "
            f"trend{'s' if len(trends) != 1 else ''}</summary><table><tr><th>trend</th>"
            "<th>fitted order [interval]</th><th>stated</th><th>points fitted</th></tr>"
            f"{rows}</table></details>")


#: Characters of a claim's unplotted figure data the report shows.
DATA_MAX = 20000
def data_text(value: Any, level: int = 0) -> str:
    """``value`` as indented JSON with each list of plain values on one line.

    >>> print(data_text({"a": [1, 2], "b": {"c": "x"}}))
    {
     "a": [1, 2],
     "b": {
      "c": "x"
     }
    }
    """
    pad, end = " " * (level + 1), "\n" + " " * level
    if isinstance(value, Mapping) and value:
        return "{\n" + ",\n".join(f"{pad}{json.dumps(str(k))}: {data_text(v, level + 1)}"
                                   for k, v in value.items()) + end + "}"
    if isinstance(value, (list, tuple)) and any(isinstance(v, (Mapping, list, tuple))
                                                for v in value):
        return "[\n" + ",\n".join(pad + data_text(v, level + 1) for v in value) + end + "]"
    return json.dumps(value, default=str)


def reproduce_command(c: Mapping[str, Any]) -> str:
    parts = [f"python -m verify check {c['id']} --fidelity {c['fidelity']} --seed {c['seed']}"]
    if c.get("dtype", "float64") != "float64":
        parts.append(f"--dtype {c['dtype']}")
    parts += [f"--module {shlex.quote(m)}" for m in c.get("modules", ())]
    return " ".join(parts)


def claim_section(c: Mapping[str, Any], shown: dict[str, str] | None = None) -> str:
    """One claim's section: statement, reading, assumptions, evidence, plots, derivations
    (folded; those in ``shown`` linked to, see :func:`derivations`), negative control and
    the command that reproduces it. A failure to render raises :class:`RenderError` naming
    the claim (and the derivation step)."""
    try:
        return _claim_section(c, shown)
    except Exception as exc:  # noqa: BLE001 - named and re-raised
        raise RenderError(f"rendering claim {c.get('id', '?')}: "
                          f"{exc if isinstance(exc, RenderError) else repr(exc)}") from exc


def assumption_state(a: Mapping[str, Any]) -> tuple[str, str]:
    """What an assumption's row says and its class: a probe beyond the assumptions that does
    not hold is reported in neutral ink, since it never decides a verdict."""
    if a["holds"]:
        return "holds", "ok-true"
    if a.get("probe"):
        return "not met (probe: reported, not deciding)", "ok-probe"
    return "FAILS", "ok-false"


def _claim_section(c: Mapping[str, Any], shown: dict[str, str] | None) -> str:
    assumptions = "".join(
        f"<tr><td>{_e(a['name'])}</td><td>{prose(a.get('description', ''))}</td>"
        f"<td class='{assumption_state(a)[1]}'>{assumption_state(a)[0]}</td>"
        f"<td>{_e(a.get('source', ''))}</td></tr>"
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
        + paper_size(c)
        + readings_table(c)
        + f"<h3>Statement (as the paper states it)</h3>"
        f"<div class=statement>{from_latex(c['statement'], display=True)}</div>"
        f"<h3>Reading (the toolkit's precise version)</h3><p>{prose(c['reading'])}</p>"
        + (f"<h3>Assumptions</h3><table><tr><th>assumption</th><th>meaning</th>"
           f"<th>this run</th><th>evaluated on</th></tr>{assumptions}</table>"
           if assumptions else "")
        + f"<h3>Evidence</h3>{evidence_table(c.get('evidence', []))}"
        + figures(c["id"], c.get("evidence", []), c.get("figures", {}))
        + (f"<h3>Derivation{'s' if len(c['derivations']) > 1 else ''}</h3>"
           f"{derivations(c['derivations'], c['id'], shown)}" if c.get("derivations") else "")
        + control_html
        + (f"<details><summary>error</summary><pre>{_e(c['error'])}</pre></details>"
           if c.get("error") else "")
        + f"<p><b>Reproduce:</b> <code>{_e(reproduce_command(c))}</code></p></section>")


def paper_size(c: Mapping[str, Any]) -> str:
    """The claim's paper-size reference beside this run's verdict (:mod:`verify.references`),
    with the reference's own diagnosis; nothing when the record carries none."""
    ref = c.get("reference")
    if not ref:
        return ""
    return (f"<p class=reference><b>Paper size:</b> {_verdict(ref['verdict'])} "
            f"{_e(summary_text(ref, label=False).removeprefix(ref['verdict'] + ' '))}"
            f" &middot; {_e(ref.get('sizes') or '')} &middot; "
            f"{_e(ref.get('diagnosis') or '')}</p>")


def readings(c: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The alternative readings a claim record carries (``record["readings"]``: name,
    description, verdict, reason, diagnosis), each checked besides the as-printed reading
    (the claim's ``reading``, whose verdict is the claim's); [] when it has none, or when
    they were not checked (a reading without a verdict)."""
    return [r for r in c.get("readings") or () if isinstance(r, Mapping) and "verdict" in r]


def reading_verdict(r: Mapping[str, Any]) -> str:
    return str(r.get("verdict") or "error")


def reading_diagnosis(r: Mapping[str, Any]) -> str:
    return str(r.get("diagnosis") or r.get("reason") or "")


def readings_table(c: Mapping[str, Any]) -> str:
    """The claim's verdict under each reading: as printed (the claim's), then each
    alternative with its description, verdict and diagnosis; "" without alternatives."""
    alternatives = readings(c)
    if not alternatives:
        return ""
    rows = "".join(
        f"<tr><td><b>{_e(r.get('name', ''))}</b>: {prose(str(r.get('description', '')))}"
        f"</td><td>{_verdict(reading_verdict(r))}</td><td>{_e(reading_diagnosis(r))}</td></tr>"
        for r in alternatives)
    return ("<h3>Readings</h3><table class=readings><tr><th>reading</th><th>verdict</th>"
            "<th>diagnosis</th></tr><tr><td><b>as printed</b>: the reading below</td>"
            f"<td>{_verdict(c['verdict'])}</td><td>{_e(printed_diagnosis(c))}</td></tr>"
            f"{rows}</table>")


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


def printed_diagnosis(c: Mapping[str, Any]) -> str:
    """The printed reading's own sentence, without the headline over every reading."""
    from verify.diagnosis import diagnose
    return diagnose(c, readings=False)


def diagnosis(c: Mapping[str, Any]) -> str:
    """The claim's one-sentence diagnosis (computed for records stored before it existed)."""
    from verify.diagnosis import diagnose
    return c.get("diagnosis") or diagnose(c)


def page_head(title: str) -> str:
    """The start of a report page, up to ``<body>``: the title and the report's CSS."""
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            "<meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body>")


def run_meta(run: Mapping[str, Any]) -> str:
    """The line under a report page's title: when, how and on what code the run was made."""
    versions = ", ".join(f"{k} {v}" for k, v in run.get("versions", {}).items() if v)
    git = run.get("git") or {}
    return (f"<p class=meta>Run {_e(run.get('started', ''))} &ndash; "
            f"{_e(run.get('finished', ''))}; fidelity {_e(run.get('fidelity', ''))}, "
            f"dtype {_e(run.get('dtype', ''))}, seed {_e(run.get('seed', ''))}; device "
            f"{_e((run.get('device') or {}).get('type', ''))}; code "
            f"{_e(git.get('revision', 'unknown'))}{' (dirty)' if git.get('dirty') else ''}"
            f"; {_e(versions)}</p>")


def not_shown(record: Mapping[str, Any]) -> tuple[str, str] | None:
    """What a page rendered from a selection leaves out (``record["not_shown"]``,
    :func:`verify.report.files.shown_only`): the sentence saying how many claims and where,
    and the command that renders them all ("" when none is known); None for a whole file."""
    info = record.get("not_shown")
    if not info:
        return None
    n = info["claims"]
    return (f"{info.get('source') or 'The results'} holds {n} other claim"
            f"{'s' if n != 1 else ''}, not shown here", info.get("command") or "")


def not_shown_html(record: Mapping[str, Any]) -> str:
    """:func:`not_shown` as a paragraph ("" for a whole file)."""
    left_out = not_shown(record)
    if left_out is None:
        return ""
    text, command = left_out
    return (f"<p class=not-shown><b>{_e(text)}</b>"
            + (f": <code>{_e(command)}</code> renders all of them" if command else "") + ".</p>")


def render_html(record: Mapping[str, Any], *, title: str = "Claim verification report") -> str:
    """The whole report for a results record (``schema_version`` 1)."""
    claims = record["claims"]
    run = record.get("run", {})
    summary = "".join(
        f"<tr><td><a href='#{_e(c['id'])}'>{_e(c['id'])}</a></td><td>{_e(c['paper'])}</td>"
        f"<td>{_verdict(c['verdict'])}</td><td>{_e(diagnosis(c))}</td>"
        f"<td class=num>{c['seconds']:.2f} s</td></tr>" for c in claims)
    counts = ", ".join(f"{n} {v}" for v, n in record.get("summary", {}).items() if n)
    shown: dict[str, str] = {}
    return (
        page_head(title) + f"<h1>{_e(title)}</h1>{run_meta(run)}<p>{len(claims)} claim"
        f"{'s' if len(claims) != 1 else ''}: "
        f"{_e(counts)} &middot; <a href=findings.html>findings per paper</a>.</p>"
        + not_shown_html(record)
        + "<table><tr><th>claim</th><th>paper</th><th>verdict</th><th>diagnosis</th>"
        f"<th>time</th></tr>{summary}</table>"
        + "".join(claim_section(c, shown) for c in claims)
        + "</body></html>\n")
