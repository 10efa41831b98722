"""The pytest plugin: a project's own claims (and the built-in ones) as pytest items.

Each run is a subprocess (``runpytest_subprocess``) so the claim registry of this session is
untouched; the user module below is what a researcher would write in their own repository.
"""
from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

USER_CLAIMS = textwrap.dedent('''
    """Two toy claims: a true identity and a false one (a wrong constant)."""
    import torch

    from verify.claim import Claim, NegativeControl
    from verify.evidence import Route, Tolerance, compare
    from verify.registry import register

    TOL = Tolerance(1e-12, "float64 sums of small integers are exact")


    def check(run):
        n = run.params["n"]
        measured = torch.arange(1, n + 1, dtype=torch.float64).sum()
        yield compare(Route.NUMERIC, "sum 1..n", stated=float(run.stated["sum"](n)),
                      measured=measured, tolerance=TOL, parameters={"n": n})


    def claim(claim_id, stated, wrong):
        return Claim(id=claim_id, paper="user", kind="lemma", title="toy", source="tests",
                     statement="sum_i i = n(n+1)/2", reading="as stated",
                     parameters={"quick": {"n": 10}, "full": {"n": 100}},
                     stated={"sum": stated}, check=check,
                     control=NegativeControl("off by one", {"sum": wrong}))


    register(claim("user.true", lambda n: n * (n + 1) / 2, lambda n: n * (n + 1) / 2 + 1))
    register(claim("user.false", lambda n: n * (n + 1), lambda n: n * (n + 1) + 1))
''')


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(userclaims=USER_CLAIMS)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess("-p", "no:cacheprovider", "--claims-module",
                                        "userclaims", *args)


def test_claims_become_items_with_verdicts_as_outcomes(project):
    result = run(project, "--claims", "user.*")
    result.assert_outcomes(passed=2, failed=1)  # test_plain, user.true; user.false fails
    result.stdout.fnmatch_lines([
        "*user.false: verdict fail*",
        "*sum 1..n: discrepancy*> tolerance 1.0e-12*",
        "*negative control (off by one): rejected*",
        "*reproduce: python -m verify check user.false --fidelity quick*--seed 0*",
    ])


def test_a_known_counterexample_is_an_xfail_and_breaks_the_build_when_it_vanishes(project):
    result = run(project, "--claims", "user.*", "--claims-only",
                 "--claims-expect-fail", "user.false")
    result.assert_outcomes(passed=1, xfailed=1)
    result = run(project, "--claims", "user.true", "--claims-only",
                 "--claims-expect-fail", "user.t*")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*expected to fail (a known counterexample) but passed*"])


def test_expected_counterexamples_from_the_ini_file(project):
    project.makeini("[pytest]\nclaims_expect_fail =\n    user.false\n")
    run(project, "--claims", "user.false", "--claims-only").assert_outcomes(xfailed=1)


def test_keyword_selection_applies_to_claims(project):
    run(project, "--claims", "user.*", "-k", "true").assert_outcomes(passed=1)


def test_unknown_pattern_is_a_usage_error_naming_the_option(project):
    result = run(project, "--claims", "nosuch.*")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--claims: *nosuch*"])


def test_without_claims_option_the_plugin_adds_nothing(project):
    run(project).assert_outcomes(passed=1)


def test_claims_only_collects_no_test_file_wherever_it_runs(project):
    """A folder holding another checkout's tests (here one whose import fails) does not break
    a --claims-only run: no test file is collected at all."""
    project.mkpydir("clone")
    (project.path / "clone" / "test_broken.py").write_text("import no_such_module_xyz\n")
    result = run(project, "--claims", "user.true", "--claims-only")
    result.assert_outcomes(passed=1)
    assert "no_such_module_xyz" not in result.stdout.str()
