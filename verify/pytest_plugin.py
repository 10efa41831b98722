"""Claims as pytest items: ``pytest --claims 'li2.thm*' --claims-fidelity quick``.

Installed with the package (entry point ``pytest11``), inactive unless ``--claims`` is given.
Each selected claim becomes one item that runs :func:`verify.runner.run_claim` (with its
negative control) and maps the verdict onto pytest's outcomes:

================  ==================================  =========================================
verdict           claim not expected to fail          claim marked ``--claims-expect-fail``
================  ==================================  =========================================
pass              passed                              failed (the counterexample went away)
fail              failed, with the failing evidence   xfailed (the known counterexample holds)
inconclusive      failed (no decision is not a pass)  failed
skipped           skipped                             skipped
error             failed, with the traceback          failed
================  ==================================  =========================================

An expected counterexample is the analogue of QuickCheck's ``expectFailure``: a paper's false
claim stays in a project's CI and the build breaks only if the finding stops reproducing.
``--claims-expect-fail`` takes ids or globs; the ini option ``claims_expect_fail`` (one per
line) lists them in a project's configuration. ``--claims-module MOD`` imports a module that
registers a project's own claims: a dotted name (found from the invocation directory, as
``python -m`` finds it), a ``.py`` file or a package folder.
"""
from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from verify import registry
from verify.diagnosis import diagnose
from verify.results import ClaimResult
from verify.claim import FIDELITIES
from verify.runner import DTYPES, run_claim
from verify.sweep import stored_sweep
from verify.verdict import Verdict



def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("theory-verify", "paper claims as test items")
    group.addoption("--claims", action="append", default=[], metavar="PATTERN",
                    help="run the claims matching PATTERN (id, alias or glob) as test items; "
                         "repeatable")
    group.addoption("--claims-fidelity", default="quick", choices=FIDELITIES,
                    help="parameter set of each claim (default: quick)")
    group.addoption("--claims-dtype", default="float64", choices=tuple(DTYPES),
                    help="floating-point precision (default: float64)")
    group.addoption("--claims-device", default="cpu",
                    help="torch device: cpu, cuda, cuda:N or auto (default: cpu)")
    group.addoption("--claims-seed", default=0, type=int, help="root seed (default: 0)")
    group.addoption("--claims-expect-fail", action="append", default=[], metavar="PATTERN",
                    help="claims known to be false: a fail verdict is an xfail, a pass fails")
    group.addoption("--claims-module", action="append", default=[], metavar="MODULE",
                    help="import MODULE first (it registers a project's own claims)")
    group.addoption("--claims-only", action="store_true",
                    help="run only the selected claims, not the tests collected beside them")
    parser.addini("claims_expect_fail", type="linelist", default=[],
                  help="claim ids or globs known to be false (see --claims-expect-fail)")


def _expected_failures(config: pytest.Config) -> list[str]:
    return list(config.getoption("claims_expect_fail")) + list(config.getini("claims_expect_fail"))


def _matches(claim_id: str, aliases: Iterable[str], patterns: Iterable[str]) -> bool:
    names = [claim_id, *aliases]
    return any(fnmatch.fnmatchcase(n, p) for p in patterns for n in names)


class ClaimFailure(Exception):
    """A claim's verdict that pytest reports as a failure (carries the result)."""

    def __init__(self, result: ClaimResult, headline: str) -> None:
        super().__init__(headline)
        self.result = result
        self.headline = headline


def describe_failure(result: ClaimResult, headline: str, modules: Sequence[str] = ()) -> str:
    """The lines a researcher needs: the verdict, its one-sentence diagnosis, why, each evidence
    item that did not pass,
    the negative control, and the command that reproduces the run (with a ``--module`` for
    each ``--claims-module``, so the pasted command finds the project's own claims)."""
    lines = [headline, f"diagnosis: {diagnose(result.as_record())}",
             f"reason: {result.reason}"]
    for e in result.evidence:
        if e.ok is True:
            continue
        disc = "undecided" if e.discrepancy is None else f"{e.discrepancy:.3e}"
        if not e.finite:
            disc = "non-finite"
        lines.append(f"  [{e.route.value}] {e.quantity}: discrepancy {disc} "
                     f"> tolerance {e.tolerance.value:.1e} ({e.tolerance.why})")
        if e.parameters:
            lines.append(f"      at {dict(e.parameters)}")
    if result.control is not None:
        state = "rejected" if result.control.rejected else "NOT rejected"
        lines.append(f"negative control ({result.control.description}): {state}")
    if result.error:
        lines.append(result.error.rstrip())
    lines.append(f"reproduce: python -m verify check {result.id} --fidelity {result.fidelity} "
                 f"--dtype {result.dtype} --seed {result.seed}"
                 + "".join(f" --module {shlex.quote(m)}" for m in modules))
    return "\n".join(lines)


class ClaimItem(pytest.Item):
    """One claim, run with its negative control."""

    def __init__(self, *, claim_id: str, expect_fail: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.claim_id = claim_id
        self.expect_fail = expect_fail
        if expect_fail:
            self.add_marker(pytest.mark.claim_expected_counterexample)

    def runtest(self) -> None:
        opt = self.config.getoption
        result = run_claim(registry.get(self.claim_id), fidelity=opt("claims_fidelity"),
                           device=opt("claims_device"), dtype=opt("claims_dtype"),
                           seed=opt("claims_seed"), sweeper=stored_sweep)
        self.user_properties.append(("verdict", result.verdict.value))
        self.user_properties.append(("seconds", round(result.seconds, 3)))
        verdict = result.verdict
        if verdict is Verdict.SKIPPED:
            pytest.skip(f"{self.claim_id}: {result.reason}")
        if self.expect_fail and verdict is Verdict.FAIL:
            pytest.xfail(f"expected counterexample reproduces: {result.key_figure_text()}")
        if self.expect_fail and verdict is Verdict.PASS:
            raise ClaimFailure(result, f"{self.claim_id} was expected to fail (a known "
                                       f"counterexample) but passed")
        if verdict is not Verdict.PASS:
            raise ClaimFailure(result, f"{self.claim_id}: verdict {verdict.value}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style=None) -> str:
        if isinstance(excinfo.value, ClaimFailure):
            return describe_failure(excinfo.value.result, excinfo.value.headline,
                                    self.config.getoption("claims_module"))
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "claims", None, f"claim {self.claim_id}"


class ClaimCollector(pytest.Collector):
    """The selected claims, in registry order."""

    def __init__(self, *, claim_ids: list[str], expected: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.claim_ids = claim_ids
        self.expected = expected

    def collect(self) -> list[ClaimItem]:
        items = []
        for claim_id in self.claim_ids:
            claim = registry.get(claim_id)
            items.append(ClaimItem.from_parent(
                self, name=claim_id, claim_id=claim_id,
                expect_fail=_matches(claim_id, claim.aliases, self.expected)))
        return items


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "claim_expected_counterexample: a claim known to be "
                                       "false (its fail verdict is an xfail)")
    if not config.getoption("claims"):
        return
    # torch.func.jvp calls the deprecated torch.jit.script internally (torch 2.13): noise
    # that says nothing about a claim.
    config.addinivalue_line("filterwarnings",
                            "ignore:`torch.jit.script` is deprecated:DeprecationWarning")
    for module in config.getoption("claims_module"):  # cwd first on sys.path, as python -m
        try:
            registry.import_claim_module(module, config.invocation_params.dir)
        except registry.ModuleLoadError as exc:
            raise pytest.UsageError(f"--claims-module: {exc}") from None
    for module, problem in registry.load_builtin_claims().items():
        config.issue_config_time_warning(
            pytest.PytestWarning(f"claims in {module} not loaded ({problem})"), stacklevel=2)


def pytest_ignore_collect(collection_path, config: pytest.Config) -> bool | None:
    """With --claims-only no test file or folder is collected at all: a checkout of another
    project's tests (or of this one) beside the run cannot break it with its imports."""
    if config.getoption("claims", None) and config.getoption("claims_only", False):
        return True
    return None


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection, so those select claims too
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    patterns = config.getoption("claims")
    if not patterns:
        return
    try:
        claims = registry.select(patterns)
    except registry.UnknownClaim as exc:
        raise pytest.UsageError(f"--claims: {exc.args[0]}") from None
    collector = ClaimCollector.from_parent(session, name="claims",
                                           claim_ids=[c.id for c in claims],
                                           expected=_expected_failures(config))
    if config.getoption("claims_only"):
        items.clear()
    items.extend(collector.collect())
