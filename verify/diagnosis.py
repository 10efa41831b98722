"""One sentence per claim that says why it got its verdict, computed from its JSON record.

``diagnose(record)`` reads only the record a run writes (``ClaimResult.as_record()``, an entry
of ``results.json`` or of the store), so the terminal, the report and the pytest plugin can all
show the same sentence:

* ``fail``: the decisive failing item as "stated X, found Y (a factor r / off by d), smallest
  case Z", exact items said as such, and how many other cases fail the same way;
* ``inconclusive``: what could not be decided and what would decide it (from the notes and
  parameters of the undecided items, or the negative control that was not rejected);
* ``pass``: what was measured at the item closest to deciding the other way: "order 1.20
  [1.03, 1.38] >= stated 1" for a fitted order, "42.0 deg < 45 deg" for a threshold with a
  unit, the measured interval nearest the other sign, else the discrepancy against its
  tolerance; "agree exactly (discrepancy 0)" only when every item is exact;
* ``error`` / ``skipped``: the exception's last line / the reason.

A quantity names its unit in parentheses after its first words, as an axis label does
("angle (degrees) between ..."); its values are then said with it.

The decisive failing item: items are grouped by their quantity with a short case label
(``"Z3: "``, ``"relu: "``) taken off; the group with readable values (numbers, small lists,
exact rationals), exact routes first, then the most failing cases, then the largest
discrepancy in units of the tolerance is chosen, and inside it the case with the smallest
parameters.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from verify.references import contradicts

__all__ = ["decisive_item", "diagnose", "diagnosed"]

_LABEL = re.compile(r"^([^:]{1,48}): (.+)$", re.S)
_MAX_SYMPY_CHARS = 4000


def diagnose(record: Mapping[str, Any], *, readings: bool = True) -> str:
    """One sentence for the claim ``record`` (a claim entry of the results JSON); a claim
    with checked alternative readings is headed by each reading's outcome ("fails as printed;
    holds under reading B: ...") unless ``readings=False`` (the printed reading's sentence
    alone, for a table that lists the readings)."""
    try:
        headline = _readings_headline(record) if readings else ""
        sentence = _diagnose(record)
        sentence = f"{headline}; as printed: {sentence}" if headline else sentence
        return f"{_contradiction(record)}{sentence}"
    except Exception as exc:  # noqa: BLE001 - a diagnosis must never break a run
        return f"{record.get('reason', '')} (no diagnosis: {type(exc).__name__})".strip()


def diagnosed(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` (``ClaimResult.as_record()``) as the results JSON holds it: each checked
    reading with its diagnosis, read from all its items, and then only the items it decides
    on (the claim's own evidence shows every item); the claim's diagnosis last."""
    out = dict(record)
    if out.get("readings") is not None:
        readings = []
        for r in out["readings"]:
            r = {**r, "diagnosis": diagnose(r)}
            r["evidence"] = [e for e in r["evidence"] if e["ok"] is not True]
            readings.append(r)
        out["readings"] = readings
    out["diagnosis"] = diagnose(out)
    return out


def _contradiction(record: Mapping[str, Any]) -> str:
    """A verdict that its paper-size reference contradicts leads its sentence with that."""
    if not contradicts(record):
        return ""
    ref = record["reference"]
    return (f"CONTRADICTS paper size ({ref['verdict']} at {ref['fidelity']}, {ref['made']}); "
            f"at {record.get('fidelity', 'this fidelity')}: ")


_OUTCOME = {"pass": "holds", "fail": "fails", "inconclusive": "is undecided",
            "error": "errors", "skipped": "is skipped"}


def _readings_headline(record: Mapping[str, Any]) -> str:
    checked = [r for r in record.get("readings") or []
               if isinstance(r, Mapping) and r.get("verdict") in _OUTCOME]
    if not checked or record.get("verdict") not in _OUTCOME:
        return ""
    return "; ".join([f"{_OUTCOME[record['verdict']]} as printed"]
                     + [f"{_OUTCOME[r['verdict']]} under reading {r.get('name')}"
                        for r in checked])


def _diagnose(record: Mapping[str, Any]) -> str:
    verdict = record.get("verdict")
    evidence = [e for e in record.get("evidence") or [] if isinstance(e, Mapping)]
    if verdict == "error":
        return f"error: {_last_line(record.get('error') or record.get('reason') or '')}"
    if verdict == "skipped":
        return f"skipped: {record.get('reason', '')}"
    if verdict == "fail":
        return _fail(evidence) or str(record.get("reason", ""))
    broken = [a for a in record.get("assumptions") or []
              if isinstance(a, Mapping) and a.get("source") == "ran" and not a.get("holds")]
    if verdict == "inconclusive" and broken:    # Run.ran: the run itself is the finding
        first = broken[0]
        more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
        return (f"the simulation did not do what the check needs: {first.get('name')}"
                + (f": {first['detail']}" if first.get("detail") else "") + more)
    if verdict == "inconclusive":
        return _inconclusive(record, evidence)
    if verdict == "pass":
        return _passed(evidence) or str(record.get("reason", ""))
    return str(record.get("reason", ""))


def _last_line(text: str) -> str:
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no traceback recorded"


# --- values -------------------------------------------------------------------------------

def _number(x: Any) -> float | Fraction | None:
    if isinstance(x, bool):
        return float(x)
    if isinstance(x, (int, float, Fraction)):
        return x
    if isinstance(x, str) and x in ("nan", "inf", "-inf"):
        return float(x)
    return None


def _flatten(value: Any) -> list | None:
    """The numbers of a route's value, flattened; None when it is not plain numbers."""
    n = _number(value)
    if n is not None:
        return [n]
    if isinstance(value, list):
        out = []
        for v in value:
            flat = _flatten(v)
            if flat is None:
                return None
            out.extend(flat)
        return out
    if isinstance(value, Mapping) and isinstance(value.get("sympy"), str):
        return _sympy_numbers(value["sympy"])
    return None


def _sympy_numbers(text: str) -> list | None:
    """The entries of a printed sympy number or matrix of numbers (rationals stay exact)."""
    if len(text) > _MAX_SYMPY_CHARS or not re.fullmatch(r"[\sMatrix\[\]\(\)0-9/.,+\-*eE]*",
                                                         text):
        return None  # symbols or something long: not a number to quote
    import sympy as sp

    try:
        value = _parse(text)
    except (sp.SympifyError, SyntaxError, TypeError, ValueError):
        return None
    entries = list(value) if isinstance(value, sp.MatrixBase) else [value]
    out: list = []
    for v in entries:
        if not getattr(v, "is_number", False) or v.is_real is False:
            return None
        if v.is_Rational:
            out.append(Fraction(int(v.p), int(v.q)))
        else:
            out.append(float(v))
    return out


_FUNCTIONS = {"Matrix", "sqrt", "exp", "log", "sin", "cos", "tan", "Abs", "I", "pi", "E",
              "Rational", "Integer", "Float", "oo", "zoo", "nan", "sign", "Max", "Min"}


def _parse(text: str):
    """A printed sympy object; every other name is a plain symbol (``beta`` is not the beta
    function, ``E`` stays Euler's number as sympy prints it)."""
    import sympy as sp

    names = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text)) - _FUNCTIONS
    return sp.sympify(text, locals={n: sp.Symbol(n) for n in names})


def _fmt(x: float | Fraction) -> str:
    """A value as a short fraction when it is one (0.0625 is 1/16), else 3 significant digits."""
    if isinstance(x, Fraction):
        if x.denominator == 1:
            return str(x.numerator)
        if x.denominator <= 1000 and abs(x.numerator) < 10**6:
            return f"{x.numerator}/{x.denominator}"
        x = float(x)
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    f = Fraction(x).limit_denominator(64)
    # a float is a fraction where a person would write one: 1/3, 3/5, 5/16; 0.08 stays 0.08
    simple = f.denominator <= 12 or f.denominator & (f.denominator - 1) == 0
    if simple and abs(float(f) - x) <= 1e-9 * abs(x) and abs(f.numerator) < 10**6:
        return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"
    return f"{x:.3g}"


def _dec(x: Any) -> str:
    """A measured statistic (an order, a slope, an interval end): 3 significant digits."""
    return f"{float(x):.3g}" if isinstance(x, (int, float)) else str(x)


def _sig(x: Any) -> str:
    """A measured value with its 3 significant digits kept: 1.20, 42.0, -0.00588."""
    if not isinstance(x, (int, float)) or not math.isfinite(x) or x == 0:
        return str(x) if x != 0 else "0"
    return f"{float(x):#.3g}".rstrip(".")


def _fmt_list(values: Sequence) -> str:
    if len(values) == 1:
        return _fmt(values[0])
    if len(values) <= 4:
        return "[" + ", ".join(_fmt(v) for v in values) + "]"
    return f"[{_fmt(values[0])}, ..., {_fmt(values[-1])}] ({len(values)} entries)"


def _close(a: float, b: float, rel: float = 1e-6) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def _all_equal(values: Sequence) -> bool:
    return all(_close(float(v), float(values[0])) for v in values)


def _relation(stated: Sequence, found: Sequence) -> tuple[str, Any] | None:
    """("factor", r) when found = r x stated entry by entry, ("offset", d) when
    found = stated + d; None otherwise."""
    if len(stated) != len(found) or not stated:
        return None
    s = [float(v) for v in stated]
    f = [float(v) for v in found]
    if not all(map(math.isfinite, s + f)):
        return None
    factor = None
    if all(v != 0 for v in s) and all(v != 0 for v in f):
        ratios = [b / a for a, b in zip(s, f)]
        if _all_equal(ratios):
            exact = [Fraction(b) / Fraction(a) for a, b in zip(stated, found)
                     if isinstance(a, Fraction) and isinstance(b, Fraction)]
            factor = ("factor", exact[0] if exact else ratios[0])
            simple = Fraction(ratios[0]).limit_denominator(16)
            if len(s) > 1 or _close(float(simple), ratios[0], 1e-9):
                return factor  # a factor 4, 1/4, -1: the likely slip
    diffs = [b - a for a, b in zip(s, f)]
    scale = max(max(map(abs, s)), max(map(abs, f)))
    if all(abs(d - diffs[0]) <= 1e-9 * scale for d in diffs):
        return ("offset", diffs[0])
    return factor


def _relation_text(rel: tuple[str, Any] | None) -> str:
    if rel is None:
        return ""
    kind, x = rel
    if kind == "factor":
        if _close(float(x), -1.0):
            return "the opposite sign"
        return f"a factor {_fmt(x)}"
    return f"off by {'+' if float(x) > 0 else ''}{_fmt(x)}"


# --- one item -------------------------------------------------------------------------------

def _is_exact(e: Mapping[str, Any]) -> bool:
    return e.get("metric") == "exact" or e.get("route") == "symbolic"


def _found_route(e: Mapping[str, Any]) -> tuple[str, Any] | None:
    """The route compared with the stated one: the one that disagrees most with it."""
    comparisons = e.get("comparisons") or {}
    best = None
    for route in ("measured", "derived"):
        if e.get(route) is None:
            continue
        d = comparisons.get(f"stated~{route}")
        d = d if isinstance(d, (int, float)) else -1.0
        if best is None or d > best[0]:
            best = (d, route)
    return (best[1], e[best[1]]) if best else None


def _pair(e: Mapping[str, Any]) -> tuple[str, list, list, str] | None:
    """(found route, stated numbers, found numbers, route name text) when both are numbers."""
    if e.get("stated") is None:
        return None
    found = _found_route(e)
    if found is None:
        return None
    route, value = found
    stated, numbers = _flatten(e["stated"]), _flatten(value)
    if stated is None or numbers is None:
        return None
    if len(stated) == 1 and len(numbers) > 1:
        stated = stated * len(numbers)
    if len(stated) != len(numbers):
        return None
    name = route
    other = "derived" if route == "measured" else "measured"
    if e.get(other) is not None and _flatten(e[other]) == numbers:
        name = "derived and measured"
    return route, stated, numbers, name


def _readable(e: Mapping[str, Any]) -> bool:
    if _pair(e) is not None or _at_witness(e):
        return True
    m = e.get("measured")
    return isinstance(m, Mapping) and ("order" in m or "slope" in m)


_UNITS = {"degrees": "deg", "radians": "rad", "seconds": "s", "epochs": "epochs",
          "steps": "steps"}
_UNIT = re.compile(r"^[^(:]{1,40}\((" + "|".join(_UNITS) + r")\)")


def _unit(e: Mapping[str, Any]) -> str:
    """The unit the quantity names after its first words ("angle (degrees) between ...")."""
    m = _UNIT.match(_split(str(e.get("quantity", "")))[1])
    return _UNITS[m.group(1)] if m else ""


def _margin(e: Mapping[str, Any]) -> float:
    """How far a passing item's measurement lies from deciding the other way: the distance of
    its interval from 0 (a sign item) or from the stated order (an order item) in units of
    the interval's width, else infinity."""
    m = e.get("measured")
    interval = m.get("interval") if isinstance(m, Mapping) else None
    if not (isinstance(interval, list) and len(interval) == 2):
        return math.inf
    lo, hi = (_number(x) for x in interval)
    if lo is None or hi is None or not hi > lo:
        return math.inf
    if e.get("metric") == "sign":
        return float(min(abs(lo), abs(hi)) / (hi - lo))
    stated = _number(e.get("stated"))
    if e.get("metric") == "order" and stated is not None:
        return float(max(lo - stated, stated - hi, 0.0) / (hi - lo))
    return math.inf


def _measured_text(e: Mapping[str, Any]) -> str:
    """``measured 0.968 [0.888, 1.05], stated sign +`` / the item's values."""
    m = e.get("measured")
    if isinstance(m, Mapping) and "mean" in m and isinstance(m.get("interval"), list):
        lo, hi = m["interval"]
        stated = _number(e.get("stated"))
        sign = ("" if e.get("metric") != "sign" or stated is None
                else f", stated sign {'+' if stated > 0 else '-' if stated < 0 else '0'}")
        return f"measured {_dec(m['mean'])} [{_dec(lo)}, {_dec(hi)}]{sign}"
    return _values_text(e)


def _order_text(e: Mapping[str, Any]) -> str:
    """A fitted order against the stated one, as the item decided: "order 1.20 [1.03, 1.38]
    >= stated 1" (``at_least``), "holds stated 1" (inside its t-interval), "< stated 1"
    (fails), "holds stated 1, undecided at resolution 0.61 (needs 0.1)"."""
    m = e["measured"]
    stated = _number(e.get("stated"))
    interval = m.get("interval")
    if stated is None or not (isinstance(interval, list) and len(interval) == 2):
        return f"order {_sig(m['order'])}"
    lo, hi = (float(x) for x in interval)
    text = f"order {_sig(m['order'])} [{_sig(lo)}, {_sig(hi)}]"
    s = _fmt(stated)
    at_least = any(">=" in k for k in e.get("comparisons") or {})
    if e.get("ok") is None:
        reach, needed = m.get("reach"), m.get("resolution needed")
        return (f"{text} holds stated {s}, undecided at resolution {_sig(reach)}"
                + (f" (needs {_dec(needed)})" if isinstance(needed, (int, float)) else ""))
    if e.get("ok") is False:
        return f"{text} {'<' if stated > hi else '>'} stated {s}"
    if lo <= stated <= hi:
        return f"{text} holds stated {s}"
    if at_least and stated < lo:
        return f"{text} >= stated {s}"
    return f"{text}, stated {s} within its bend allowance"


def _threshold_text(e: Mapping[str, Any]) -> str:
    """An item with a unit compared with a stated 0 within a tolerance in the same unit: the
    tolerance is the statement's threshold ("42.0 deg < 45 deg"); "" for any other item."""
    unit, d, tol = _unit(e), e.get("discrepancy"), e.get("tolerance")
    stated = e.get("stated")
    zero = (stated.get("max_abs") == 0 if isinstance(stated, Mapping) and "max_abs" in stated
            else _flatten(stated) is not None and not any(_flatten(stated)))
    if not (unit and zero and e.get("metric") == "absolute"
            and isinstance(d, (int, float)) and isinstance(tol, (int, float)) and tol > 0):
        return ""
    relation = "<" if d < tol else ">" if d > tol else "="
    return f"{_sig(d)} {unit} {relation} {_fmt(tol)} {unit}"


def _values_text(e: Mapping[str, Any]) -> str:
    """"stated X, measured Y (a factor r)" or the item's discrepancy against its tolerance."""
    exact = ", exact" if _is_exact(e) else ""
    m = e.get("measured")
    if isinstance(m, Mapping) and "order" in m:
        return _order_text(e)
    if isinstance(m, Mapping) and "slope" in m:
        stated = _flatten(e.get("stated"))
        interval = m.get("interval")
        iv = (f" (interval [{_dec(interval[0])}, {_dec(interval[1])}])"
              if isinstance(interval, list) and len(interval) == 2 else "")
        s = "" if not stated else f"stated slope {'>' if float(stated[0]) > 0 else '<'} 0, "
        return f"{s}measured slope {_dec(m['slope'])}{iv}"
    threshold = _threshold_text(e)
    if threshold:
        return threshold
    if e.get("metric") == "violation":
        pair = _pair(e)
        if pair is not None:
            _, bound, measured, _ = pair
            direction = ">=" if any(">=" in k for k in (e.get("comparisons") or {})) else "<="
            i = _worst_violation(bound, measured, direction)
            worst = "worst" if e.get("ok") is False else "tightest"
            where = [f"{worst} of {len(bound)} entries"] if len(bound) > 1 else []
            note = str(e.get("note") or "")
            if note.startswith("measured") and len(note) <= 120:
                where.append(note)  # what the two sides are, when the check says so
            if exact:
                where.append("exact")
            sign = (direction if e.get("ok") else "<" if direction == ">=" else ">")
            return (f"measured {_fmt(measured[i])} {sign} stated bound {_fmt(bound[i])}"
                    + (f" ({'; '.join(where)})" if where else ""))
    pair = _pair(e)
    if pair is not None:
        _, stated, found, name = pair
        if stated == found:
            return f"{name} {_fmt_list(found)} as stated{exact}"
        rel = _relation(stated, found)
        if rel is None and len(stated) > 4:
            i = max(range(len(stated)), key=lambda k: abs(float(found[k]) - float(stated[k])))
            text = (f"stated {_fmt(stated[i])}, {name} {_fmt(found[i])} at entry {i + 1} "
                    f"of {len(stated)}")
        elif len(stated) > 1 and _all_equal(stated) and _all_equal(found):
            every = "both entries" if len(stated) == 2 else f"all {len(stated)} entries"
            text = f"stated {_fmt(stated[0])}, {name} {_fmt(found[0])} in {every}"
        else:
            text = f"stated {_fmt_list(stated)}, {name} {_fmt_list(found)}"
        extra = ", ".join(x for x in (_relation_text(rel), exact.lstrip(", ")) if x)
        return f"{text} ({extra})" if extra else text
    witness = _at_witness(e)
    if witness:
        return witness
    return _discrepancy_text(e) + exact


def _at_witness(e: Mapping[str, Any]) -> str:
    """An exact item whose sides are expressions: both evaluated at the recorded witness."""
    import ast

    m = re.search(r"witness (\{[^{}]*\})", str(e.get("note") or ""))
    if not m or not _is_exact(e):
        return ""
    try:
        witness = ast.literal_eval(m.group(1))
    except (ValueError, SyntaxError):
        return ""
    sides = [e.get("stated"), e.get("derived")]
    if not all(isinstance(v, Mapping) and isinstance(v.get("sympy"), str)
               and len(v["sympy"]) <= _MAX_SYMPY_CHARS for v in sides):
        return ""
    import sympy as sp

    try:
        subs = {sp.Symbol(k): sp.Rational(str(v)) for k, v in witness.items()}
        values = []
        for side in sides:
            expr = _parse(side["sympy"])
            expr = expr.xreplace({s: subs[sp.Symbol(s.name)] for s in expr.free_symbols
                                  if sp.Symbol(s.name) in subs})
            entries = list(expr) if isinstance(expr, sp.MatrixBase) else [expr]
            row: list = []
            for x in entries:
                if x.is_Rational:
                    row.append(Fraction(int(x.p), int(x.q)))
                else:
                    z = complex(sp.N(x))
                    if abs(z.imag) > 1e-12 * max(abs(z), 1e-300):
                        return ""
                    row.append(z.real)
            values.append(row)
    except Exception:  # noqa: BLE001 - an expression sympy cannot evaluate: no numbers
        return ""
    stated, derived = values
    if len(stated) != len(derived):
        return ""
    i = max(range(len(stated)), key=lambda k: abs(float(derived[k]) - float(stated[k])))
    at = ", ".join(f"{k} = {v}" for k, v in witness.items())
    entry = f" (entry {i + 1} of {len(stated)})" if len(stated) > 1 else ""
    return (f"stated {_fmt(stated[i])}, derived {_fmt(derived[i])}{entry} at the exact "
            f"witness {at}")


def _worst_violation(bound: Sequence, measured: Sequence, direction: str) -> int:
    def excess(i: int) -> float:
        b, m = float(bound[i]), float(measured[i])
        scale = max(abs(b), abs(m), 1e-300)
        return ((b - m) if direction == ">=" else (m - b)) / scale
    return max(range(len(bound)), key=excess)


def _discrepancy_text(e: Mapping[str, Any]) -> str:
    from verify.results import compared_texts

    d, tol = e.get("discrepancy"), e.get("tolerance")
    if not isinstance(d, (int, float)) or not isinstance(tol, (int, float)):
        return f"discrepancy {d}"
    d_text, t_text = compared_texts(float(d), float(tol))
    metric = e.get("metric")
    kind = {"relative": "relative discrepancy", "absolute": "discrepancy"}.get(metric,
                                                                              "discrepancy")
    return f"{kind} {d_text} (tol {t_text})"


def _case(e: Mapping[str, Any]) -> str:
    """The item's scalar parameters, shortly: "group Z3, M = 3"."""
    parts = []
    for name, value in (e.get("parameters") or {}).items():
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float)):
            parts.append(f"{name} = {_fmt(value)}")
        elif isinstance(value, str) and len(value) <= 24:
            parts.append(f"group {value}" if name == "group" else f"{name} = {value}")
        if len(parts) == 4:
            break
    return ", ".join(parts)


def _size(e: Mapping[str, Any]) -> float:
    """How large an item's case is (smaller first): its numbers and the numbers in its names."""
    total = 0.0
    for value in (e.get("parameters") or {}).values():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) and math.isfinite(value):
            total += abs(value)
        elif isinstance(value, str) and len(value) <= 24:
            total += math.prod(int(n) for n in re.findall(r"\d+", value)) if \
                re.search(r"\d", value) else 0
        elif isinstance(value, list):
            total += len(value)
    return total


def _ratio(e: Mapping[str, Any]) -> float:
    d, tol = e.get("discrepancy"), e.get("tolerance")
    if not isinstance(d, (int, float)):
        return math.inf
    if not isinstance(tol, (int, float)) or tol == 0:
        return 0.0 if d == 0 else math.inf
    return d / tol


# --- verdicts -------------------------------------------------------------------------------

def _split(quantity: str) -> tuple[str, str]:
    """("Z3", "E*/M at ...") for "Z3: E*/M at ..."; ("", quantity) without a short label."""
    m = _LABEL.match(quantity)
    if m and m.group(1).count("(") == m.group(1).count(")"):
        return m.group(1).strip(), m.group(2).strip()
    return "", quantity


def decisive_item(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The evidence item the diagnosis of ``record`` quotes: for a ``fail`` the decisive
    failing item (its smallest case, see the module doc), for an ``inconclusive`` the first
    non-finite item, else the smallest undecided one; None otherwise (and when there is none)."""
    evidence = [e for e in record.get("evidence") or [] if isinstance(e, Mapping)]
    verdict = record.get("verdict")
    if verdict == "fail":
        chosen = _fail_group(evidence)
        return chosen[1][0] if chosen else None
    if verdict == "inconclusive":
        nonfinite = [e for e in evidence if e.get("finite") is False]
        if nonfinite:
            return nonfinite[0]
        undecided = [e for e in evidence if e.get("ok") is None]
        return min(undecided, key=_size) if undecided else None
    return None


def _fail_group(evidence: list[Mapping[str, Any]]
                ) -> tuple[str, list[Mapping[str, Any]]] | None:
    """The chosen group of failing items (its quantity without the case label, and its items
    with the decisive one first); None when nothing fails."""
    failing = [e for e in evidence if e.get("ok") is False]
    if not failing:
        return None
    by_rest: dict[str, list[Mapping[str, Any]]] = {}
    for e in failing:
        by_rest.setdefault(_split(str(e.get("quantity", "")))[1], []).append(e)
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for rest, items in by_rest.items():  # a label shared by no other item is no case label
        for e in items:
            groups.setdefault(rest if len(items) > 1 else str(e.get("quantity")), []).append(e)

    def rank(item: tuple[str, list]) -> tuple:
        _, items = item
        readable = sum(_readable(e) for e in items)
        return (readable > 0, any(_is_exact(e) for e in items), len(items),
                max(_ratio(e) for e in items))

    rest, items = max(groups.items(), key=rank)
    return rest, sorted(items, key=lambda e: (not _readable(e), _size(e), -_ratio(e)))


def _fail(evidence: list[Mapping[str, Any]]) -> str:
    group = _fail_group(evidence)
    if group is None:
        return ""
    failing = [e for e in evidence if e.get("ok") is False]
    rest, items = group
    chosen = items[0]
    case = _case(chosen)
    text = _values_text(chosen)
    if len(items) > 1:
        text += f", smallest case {case}" if case else ""
        text += "; " + _same_way(rest, items, evidence)
    elif case:
        text += f", at {case}"
    text += f", for {chosen.get('quantity')}"
    others = len(failing) - len(items)
    undecided = sum(1 for e in evidence if e.get("ok") is None)
    tail = []
    if others:
        tail.append(f"{len(failing)} of {len(evidence)} items fail")
    if undecided:
        tail.append(f"{undecided} undecided")
    return text + (f" ({'; '.join(tail)})" if tail else "")


def _same_way(rest: str, items: list[Mapping[str, Any]], evidence) -> str:
    """"the same factor 4 in all 8 groups (Z3, ...)" or "fails in 3 of 5 cases (...)"."""
    labels = [_split(str(e.get("quantity", "")))[0] or _case(e) for e in items]
    total = sum(1 for e in evidence if _split(str(e.get("quantity", "")))[1] == rest)
    noun = "groups" if all(lab == (e.get("parameters") or {}).get("group")
                           for lab, e in zip(labels, items)) else "cases"
    shown = "; ".join(labels[:8]) + ("; ..." if len(labels) > 8 else "")
    count = (f"both {noun}" if len(items) == 2 else f"all {len(items)} {noun}") \
        if total == len(items) else f"{len(items)} of {total} {noun}"
    relations = []
    for e in items:
        pair = _pair(e)
        relations.append(_relation(pair[1], pair[2]) if pair else None)
    first = relations[0]
    if first is not None and all(r is not None and r[0] == first[0]
                                 and _close(float(r[1]), float(first[1])) for r in relations):
        return f"{_relation_text(first)} in {count} ({shown})"
    return f"fails in {count} ({shown})"


def _decider(text: str, nonfinite: bool) -> str:
    t = text.lower()
    wants = []
    if nonfinite:
        wants.append("a run without NaN/Inf (a smaller step, or float64)")
    if "seed" in t:
        wants.append("more seeds")
    if "longer grid" in t:
        wants.append("a longer grid towards the limit")
    if any(w in t for w in ("epoch", "budget", "steps", "horizon", "never reach")):
        wants.append("a longer run")
    if "timeout" in t or "timed out" in t:
        wants.append("a longer symbolic timeout")
    if "undecided by" in t or "could not be reduced" in t or "could not decide" in t:
        wants.append("a simplification that reduces the difference to 0 or a nonzero witness")
    if any(w in t for w in ("roundoff", "precision", "floor", "float32")):
        wants.append("a higher precision")
    if not wants:
        return "the record does not say what would decide it"
    return " or ".join(wants) + " would decide it"


def _inconclusive(record: Mapping[str, Any], evidence: list[Mapping[str, Any]]) -> str:
    if not evidence:   # a diverged simulation says where in its reason: that is the cause
        return str(record.get("reason") or "the check returned no evidence")
    nonfinite = [e for e in evidence if e.get("finite") is False]
    undecided = [e for e in evidence if e.get("ok") is None and e.get("finite") is not False]
    control = record.get("negative_control") or {}
    if nonfinite:
        e = nonfinite[0]
        more = f" ({len(nonfinite)} items)" if len(nonfinite) > 1 else ""
        return (f"non-finite values (NaN/Inf) in {e.get('quantity')}{more}"
                f"{', at ' + _case(e) if _case(e) else ''}; "
                f"{_decider(str(e.get('note', '')), True)}")
    if undecided:
        e = min(undecided, key=_size)
        note = str(e.get("note") or "").strip()
        order = isinstance(e.get("measured"), Mapping) and "order" in e["measured"]
        what = (f"{_order_text(e)}, for {e.get('quantity')}" if order
                else f"{note}, for {e.get('quantity')}" if note
                else f"{e.get('quantity')} undecided")
        more = f" ({len(undecided)} of {len(evidence)} items undecided)" \
            if len(undecided) > 1 else ""
        params = " ".join(str(k) for k in (e.get("parameters") or {}))
        return f"{what}{more}; {_decider(note + ' ' + params, False)}"
    if control and control.get("rejected") is False:
        tight = _passed(evidence)
        return (f"no power: the planted wrong variant ({control.get('description')}) "
                f"got {control.get('verdict_of_variant')}, not fail; a check that separates "
                f"it would decide it" + (f" ({tight})" if tight else ""))
    return str(record.get("reason", ""))


def _passed(evidence: list[Mapping[str, Any]]) -> str:
    decided = [e for e in evidence if e.get("ok") is True]
    if not decided:
        return ""
    e = max(decided, key=_ratio)
    if _ratio(e) > 0:
        share = _ratio(e)
        case = _case(e)
        share_text = "under 1%" if share < 0.01 else f"{share:.0%}"
        measured = (_order_text(e) if isinstance(e.get("measured"), Mapping)
                    and "order" in e["measured"] else _threshold_text(e)
                    or _discrepancy_text(e))
        return (f"{measured}, {share_text} of the tolerance, the tightest of "
                f"{len(evidence)} items: {e.get('quantity')}{', at ' + case if case else ''}")
    measured = [x for x in decided if not _is_exact(x)]
    if not measured:
        every = "the only item agrees" if len(evidence) == 1 else \
            f"all {len(evidence)} items agree"
        return f"{every} exactly (discrepancy 0)"
    # no distance to show (a sign, an order, a count, a bound met with room): say what was
    # measured at the item that came nearest to the other side
    e = min(measured, key=_margin)
    held = ("the only item holds" if len(evidence) == 1 else
            f"{len(decided)} of {len(evidence)} items hold")
    which = "nearest the other side" if math.isfinite(_margin(e)) else "e.g."
    return f"{held}; {which}: {_measured_text(e)}, at {e.get('quantity')}"
