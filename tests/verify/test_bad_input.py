"""Bad input is refused before any work: one line naming the parameter (exit 2, or a
ValueError from the Python API), no traceback, and the user's earlier results intact."""
import dataclasses
import hashlib
import json
import re
import shlex
import sqlite3
import time
from pathlib import Path

import pytest
import torch

from tests.planted import make_claim, planted
from verify import registry
from verify.cli import main
from verify.bounds import Bound, Footprint, interval, minimum, positive
from verify.claim import Claim
from verify.runner import ParameterError, run_claim, validate_overrides
from verify.store import ResultStore, StoreWriteError

registry.load_builtin_claims()
ROOT = Path(__file__).resolve().parents[2]

RECORD = {"id": "test.earlier", "fidelity": "quick", "seed": 0, "dtype": "float64",
          "device": "cpu", "parameters": {}, "verdict": "pass", "seconds": 1.0}


@pytest.fixture
def earlier(tmp_path):
    """A results.json and a store holding one row, as an earlier run left them."""
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"schema_version": 1, "run": {}, "summary": {},
                                   "claims": []}) + "\n")
    store = ResultStore(tmp_path / "store.sqlite")
    store.put("k" * 64, RECORD, revision=None)

    def digest():
        return (hashlib.sha256(results.read_bytes()).hexdigest(),
                [r.record for r in store.history("test.earlier")])

    before = digest()
    yield tmp_path
    assert digest() == before, "earlier results changed"


# (argv after the paths are filled in, the parameter the one-line message must name)
CLI_CASES = [
    (["check", "li2.eq2", "--set", "n=nan"], "n must be an integer >= 1"),
    (["check", "li2.eq2", "--set", "n=3.5"], "n must be an integer >= 1"),
    (["check", "li2.eq2", "--set", "n=abc"], "n must be an integer >= 1"),
    (["check", "li2.eq2", "--set", "n=0"], "n must be an integer >= 1"),
    (["check", "li2.eq2", "--set", "n=inf"], "n must be an integer >= 1"),
    (["check", "li2.eq2", "--set", "symbolic_size=3"], "symbolic_size must be a dict"),
    (["check", "li2.eq2", "--set", "symbolic_size={'n': 3, 'K': 2}"], "'M' is missing"),
    (["check", "li2.eq2", "--set", "symbolic_size={'n': 3, 'K': 2, 'M': 2, 'q': 1}"],
     "'q' is not a key"),
    (["check", "li2.eq2", "--set", "nn=3"], "'nn' is not a parameter of li2.eq2"),
    (["check", "li2.eq2", "--set", "n=3", "--set", "n=4"], "n is given twice"),
    (["check", "li2.cor1", "--set", "groups=('Z999x',)"], "groups[0] must be a group name"),
    (["check", "li2.cor1", "--set", "groups=XYZ"], "groups must be a tuple"),
    (["check", "li2.cor1", "--set", "groups=(4,)"], "groups[0] must be a string"),
    (["check", "li2.cor1", "--set", "groups=('Z0',)"], "groups[0] must be a group name"),
    (["check", "li2.eq2", "--threads", "100000"], "--threads"),
    (["check", "li2.eq2", "--seed", str(2**70)], "--seed"),
    (["check", "li2.eq2", "--json", "{tmp}/results.json/x.json"], "--json"),
    (["check", "li2.eq2", "--json", "{tmp}"], "--json"),
    (["check", "li2.eq2", "--report", "{tmp}/results.json"], "--report"),
    # a missing parent folder is named, never created (not even at /)
    (["check", "li2.eq2", "--json", "{tmp}/no/such/r.json"], "the folder {tmp}/no/such does "
                                                                "not exist"),
    (["check", "li2.eq2", "--report", "{tmp}/no/such"], "the folder {tmp}/no does not exist"),
    # root may write anywhere by os.access, but not under /proc: found by writing there
    (["check", "li2.eq2", "--json", "/proc/r.json"], "--json: cannot write /proc/r.json"),
    (["check", "li2.eq2", "--report", "{tmp}/results.json/sub/dir"], "--report"),
    (["stress", "li2.eq2", "--json", "{tmp}/results.json/s.json"], "--json"),
    (["stress", "li2.eq2", "--threads", "100000"], "--threads"),
    (["report", "--from", "{tmp}/garbage.bin", "--out", "{tmp}/out"], "not a results file"),
    (["history", "no.such.claim", "--store", "{tmp}/store.sqlite"], "unknown claim id"),
    (["report", "--from", "{tmp}/nan.json", "--out", "{tmp}/out"],
     "{tmp}/nan.json: field claims[0].evidence[0].discrepancy is nan"),
    (["report", "--from", "{tmp}/list.json", "--out", "{tmp}/out"], "not a results file"),
    (["report", "--from", "{tmp}/partial.json", "--out", "{tmp}/out"],
     "claim 'a' lacks"),
    (["report", "--from", "{tmp}/badclaims.json", "--out", "{tmp}/out"],
     "evidence is not a list"),
    (["report", "--from", "{tmp}", "--out", "{tmp}/out"], "is a directory"),
    (["report", "--from-store", "--store", "{tmp}/broken.sqlite", "--out", "{tmp}/out"],
     "row 1 of"),
    (["history", "test.broken", "--store", "{tmp}/broken.sqlite"], "row 1 of"),
]


def _refused(tmp, argv, monkeypatch, capsys) -> tuple[int, str]:
    """``main(argv)`` with ``{tmp}`` filled in (and, for check and stress, output paths in
    ``tmp``): its exit code and stderr, after asserting that no claim ran."""
    ran = []
    monkeypatch.setattr("verify.cli.commands.run_claim", lambda *a, **k: ran.append(a))
    monkeypatch.setattr("verify.stress.stress", lambda *a, **k: ran.append(a))
    args = [a.replace("{tmp}", str(tmp)) for a in argv]
    if args[0] in ("check", "stress") and "--json" not in args:
        args += ["--json", str(tmp / "results.json")]
    if args[0] == "check":
        args += ["--store", str(tmp / "store.sqlite"), "--jobs", "1"]
    code = main(args)
    err = capsys.readouterr().err
    assert not ran, "a claim ran before the input was checked"
    assert err.count("\n") == 1, err
    assert "Traceback" not in err and "internal error" not in err
    return code, err


@pytest.mark.parametrize("argv, names", CLI_CASES, ids=[" ".join(a) for a, _ in CLI_CASES])
def test_cli_refuses_bad_input_before_any_work(earlier, capsys, monkeypatch, argv, names):
    tmp = earlier
    (tmp / "garbage.bin").write_bytes(b"\x89PNG\x00\xff\xfe")
    (tmp / "list.json").write_text("[1, 2]")
    (tmp / "nan.json").write_text(json.dumps({"schema_version": 1, "claims": [
        {"id": "a", "title": "", "statement": "", "verdict": "pass", "reason": "",
         "parameters": {}, "assumptions": [], "evidence": [{"discrepancy": float("nan")}]}]}))
    (tmp / "partial.json").write_text(json.dumps({"schema_version": 1, "claims": [{"id": "a"}]}))
    (tmp / "badclaims.json").write_text(json.dumps({"schema_version": 1, "claims": [
        {"id": "a", "title": "", "statement": "", "verdict": "pass", "reason": "",
         "parameters": {}, "assumptions": [], "evidence": 3}]}))
    broken = ResultStore(tmp / "broken.sqlite")
    broken.put("b" * 64, {**RECORD, "id": "test.broken"}, revision=None)
    with sqlite3.connect(tmp / "broken.sqlite") as db:
        db.execute("UPDATE results SET record = 'garbage{'")

    code, err = _refused(tmp, argv, monkeypatch, capsys)
    assert code == 2
    assert names.replace("{tmp}", str(tmp)) in err, err
    assert not (tmp / "out").exists()


#: docs/bad-input.md's table: (class, argv, exit code, what the one line contains).
_ROW = re.compile(r"^\| ([^|]+) \| `([^`]+)` \| (\d) \| `([^`]+)` \|$")
TABLE = [(m[1], shlex.split(m[2]), int(m[3]), m[4])
         for m in map(_ROW.match, (ROOT / "docs/bad-input.md").read_text().splitlines()) if m]


def test_the_table_has_every_class_of_the_audit():
    classes = " / ".join(row[0] for row in TABLE)
    for kind in ("not a number", "not finite", "out of bounds", "degenerate", "too large",
                 "too long", "unknown parameter", "unknown claim", "output path"):
        assert kind in classes, kind


@pytest.mark.parametrize("kind, argv, code, message", TABLE, ids=[row[0] for row in TABLE])
def test_every_row_of_the_bad_input_table(earlier, capsys, monkeypatch, kind, argv, code,
                                          message):
    """Run from the repository (its rows name README.md and docs/); each is refused in
    milliseconds, since nothing but the arguments is looked at."""
    monkeypatch.chdir(ROOT)
    start = time.perf_counter()
    got, err = _refused(earlier, argv, monkeypatch, capsys)
    assert (got, message in err) == (code, True), err
    assert time.perf_counter() - start < 5, "a refusal must come before any work"


API_CASES = [
    (dict(overrides={"nn": 3}), "'nn' is not a parameter of test.gauss (parameters: n)"),
    (dict(overrides={"n": 0}), "n must be an integer >= 1"),
    (dict(overrides={"n": float("nan")}), "n must be an integer >= 1"),
    (dict(overrides={"n": True}), "n must be an integer >= 1"),
    (dict(overrides=[("n", 3)]), "overrides"),
    (dict(dtype=torch.float16), "dtype"),
    (dict(dtype="float16"), "dtype"),
    (dict(seed=2**70), "seed"),
    (dict(seed=-1), "seed"),
    (dict(seed=True), "seed"),
    (dict(fidelity="fast"), "fidelity"),
]


@pytest.mark.parametrize("kwargs, names", API_CASES, ids=[str(k) for k, _ in API_CASES])
def test_run_claim_raises_value_error_before_any_work(kwargs, names):
    ran = []

    def check(run):
        ran.append(run)
        return iter(())

    claim = make_claim(check=check)
    with pytest.raises(ValueError) as info:
        run_claim(claim, device="cpu", **kwargs)
    assert names in str(info.value) and "\n" not in str(info.value)
    assert not ran


def _bounded(**fields) -> Claim:
    """The planted claim (n = 10 quick, 1000 full) with ``fields`` replaced."""
    return dataclasses.replace(make_claim(), **fields)


def test_run_claim_refuses_values_outside_the_bounds_before_any_work():
    ran = []
    claim = _bounded(check=lambda run: ran.append(run) or iter(()),
                     bounds={"n": minimum(3, "a sum of two terms is its own check")})
    with pytest.raises(ParameterError, match=r"n must be >= 3, not 2 \(a sum of two terms"):
        run_claim(claim, device="cpu", overrides={"n": 2})
    assert not ran


def test_bounds_reach_into_a_whole_dict_override():
    fig6 = registry.get("li2.fig6")
    training = {**fig6.parameters["quick"]["training"], "lrs": (0.01, 0.01)}
    with pytest.raises(ParameterError, match=r"training.lrs must have distinct values"):
        validate_overrides(fig6, {"training": training})


def test_the_footprint_refuses_memory_beyond_the_machine_and_work_beyond_the_limit():
    claim = _bounded(footprint=Footprint(memory=(("n",),), work=(("n", "n"),)))
    with pytest.raises(ParameterError, match=r"n=10000000000000 at quick fidelity needs "
                                             r"about 7.45e\+04 GiB of float64 arrays"):
        validate_overrides(claim, {"n": 10**13}, fidelity="quick")
    with pytest.raises(ParameterError, match=r"n=1000000 at full fidelity needs at least "
                                             r"1,000 CPU-s .* time limit of 10 CPU-s"):
        run_claim(claim, device="cpu", fidelity="full", overrides={"n": 10**6},
                  time_limit=10)
    # no time limit, no time check; no fidelity, no footprint at all
    assert validate_overrides(claim, {"n": 10**6}, fidelity="full") == {"n": 10**6}
    assert validate_overrides(claim, {"n": 10**13}) == {"n": 10**13}


def test_a_claim_declaring_defaults_outside_its_bounds_is_refused():
    with pytest.raises(ValueError, match="test.gauss: its full n must be in"):
        _bounded(bounds={"n": interval(1, 100)})
    with pytest.raises(ValueError, match=r"unknown parameters \['m'\]"):
        _bounded(bounds={"m": positive()})
    with pytest.raises(ValueError, match=r"unknown parameters \['k'\]"):
        _bounded(footprint=Footprint(memory=(("n", "k"),)))


def test_a_bound_says_what_is_allowed():
    assert [b.describe() for b in (positive(), minimum(2), interval(0, 1, "(]"),
                                   Bound(high=3, high_open=True))] == \
        ["> 0", ">= 2", "in (0, 1]", "< 3"]
    assert interval(0, 1, "[)").problem((0.5, 1.0)) == "must have every value in [0, 1)"
    assert positive().problem(None) is None     # a declared "off" is not a number
    with pytest.raises(ValueError, match="ends"):
        interval(0, 1, "[[")


def test_every_declared_default_and_stress_space_validates():
    """The checks refuse nothing a claim declares itself, nor what its stress space draws."""
    from verify.sampling import Choice
    for claim in registry.all_claims():
        for fidelity in ("quick", "full"):
            validate_overrides(claim, dict(claim.parameters[fidelity]))
        for name, dim in claim.space.items():
            if name != "seed":
                for value in (dim.options if isinstance(dim, Choice) else (dim.lo, dim.hi)):
                    validate_overrides(claim, {name: value})


def test_valid_overrides_keep_their_meaning():
    cor1 = registry.get("li2.cor1")
    assert validate_overrides(cor1, {"groups": ["Z4", "Z3xZ3"]}) == {"groups": ("Z4", "Z3xZ3")}
    eq2 = registry.get("li2.eq2")
    assert validate_overrides(eq2, {"n": 3, "symbolic_size": {"n": 2, "K": 2, "M": 2}}) == \
        {"n": 3, "symbolic_size": {"n": 2, "K": 2, "M": 2}}
    # a collection (keys differ between fidelities, values of one kind) takes any subset ...
    fig5 = registry.get("li2.fig5")
    cyclic = {"cyclic": {"Z71": 1}}
    assert validate_overrides(fig5, {"panels": cyclic}) == {"panels": cyclic}
    with pytest.raises(ParameterError, match="'Z7' is not a key of it"):
        validate_overrides(fig5, {"panels": {"cyclic": {"Z7": 1}}})
    # ... while a record must still give every key
    with pytest.raises(ParameterError, match="must give every key"):
        validate_overrides(eq2, {"symbolic_size": {"n": 2, "K": 2}})
    with pytest.raises(ParameterError, match="must be a finite number"):
        validate_overrides(registry.get("li2.lemma1"), {"mc": {
            **registry.get("li2.lemma1").parameters["quick"]["mc"], "beta": float("inf")}})


def test_a_planted_claim_with_a_valid_override_still_runs(earlier, capsys):
    with planted(make_claim("test.gauss_bad_input")):
        assert main(["check", "test.gauss_bad_input", "--set", "n=5", "--no-store",
                     "--jobs", "1", "--json", str(earlier / "other.json")]) == 0
    record = json.loads((earlier / "other.json").read_text())
    assert record["claims"][0]["parameters"]["n"] == 5
    assert record["claims"][0]["verdict"] == "pass"


class _FullDisk:
    """A connection whose INSERT fails as SQLite does on a full disk: SQLite has already
    rolled the transaction back when the error comes."""

    def __init__(self, db):
        self._db = db

    def execute(self, sql, *args):
        if sql.lstrip().upper().startswith("INSERT"):
            self._db.execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")
        return self._db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._db, name)


def test_full_disk_reports_the_sqlite_error_and_keeps_earlier_rows(tmp_path, monkeypatch):
    store = ResultStore(tmp_path / "s.sqlite")
    store.put("a" * 64, RECORD, revision=None)
    real = store._connect
    monkeypatch.setattr(store, "_connect", lambda: _FullDisk(real()))
    with pytest.raises(StoreWriteError) as info:
        store.put("b" * 64, {**RECORD, "id": "test.later"}, revision=None)
    assert "database or disk is full" in str(info.value)
    assert "cannot rollback" not in str(info.value)
    monkeypatch.undo()
    assert [r.record for r in store.history("test.earlier")] == [RECORD]
    assert list(store.history("test.later")) == []
    assert store.integrity() == "ok"


def test_full_disk_during_check_is_one_line(earlier, capsys, monkeypatch):
    import verify.store as store_module

    real = store_module.ResultStore._connect
    with planted(make_claim("test.gauss_full_disk")):
        monkeypatch.setattr(store_module.ResultStore, "_connect",
                            lambda self: _FullDisk(real(self)))
        code = main(["check", "test.gauss_full_disk", "--store",
                     str(earlier / "store.sqlite"), "--jobs", "1",
                     "--json", str(earlier / "results.json")])
        monkeypatch.undo()
    err = capsys.readouterr().err
    assert code == 3
    assert "database or disk is full" in err and err.count("\n") == 1
    assert "Traceback" not in err


def test_a_dotted_override_varies_one_key_of_a_nested_parameter(earlier, capsys):
    """``--set mc.beta=2.0`` (and a stress dimension of that name) replaces one key of the
    fidelity's dict and keeps the others; a wrong key or type is refused with its path."""
    from verify.runner import merge_overrides
    lemma1 = registry.get("li2.lemma1")
    quick = lemma1.parameters["quick"]["mc"]
    assert validate_overrides(lemma1, {"mc.beta": 2.0}) == {"mc.beta": 2.0}
    merged = merge_overrides(lemma1.parameters["quick"], {"mc.beta": 2.0})
    assert merged["mc"] == {**quick, "beta": 2.0} and lemma1.parameters["quick"]["mc"] == quick
    with pytest.raises(ParameterError, match="mc: 'bta' is not a key of it"):
        validate_overrides(lemma1, {"mc.bta": 2.0})
    with pytest.raises(ParameterError, match="mc.beta must be a finite number"):
        validate_overrides(lemma1, {"mc.beta": float("inf")})
    with pytest.raises(ParameterError, match="both given"):
        merge_overrides(lemma1.parameters["quick"], {"mc": quick, "mc.beta": 2.0})
    assert main(["check", "li2.lemma1", "--set", "mc.bta=2"]) == 2
    assert "mc: 'bta' is not a key" in capsys.readouterr().err


def test_an_unreachable_dask_scheduler_is_refused_at_once(capsys):
    """A closed port on this machine: refused by a plain socket in milliseconds, naming the
    address, before any claim runs (was: an internal error after 30 s)."""
    import time

    pytest.importorskip("distributed")
    start = time.monotonic()
    assert main(["check", "li2.eq2", "--backend", "dask", "--scheduler", "tcp://127.0.0.1:9",
                 "--no-store"]) == 2
    assert time.monotonic() - start < 10
    assert "--scheduler: the Dask scheduler tcp://127.0.0.1:9 cannot be reached" in \
        capsys.readouterr().err
