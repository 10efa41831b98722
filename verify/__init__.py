"""The claim registry binding theory/ derivations to numerics/ experiments, with verdicts."""
from verify.claim import Assumption, Claim, NegativeControl, SkipClaim
from verify.evidence import Evidence, Route, Tolerance, compare, symbolic_identity
from verify.registry import register
from verify.results import ClaimResult
from verify.run import Run
from verify.runner import run_claim
from verify.verdict import Verdict

__all__ = ["Assumption", "Claim", "ClaimResult", "Evidence", "NegativeControl", "Route", "Run",
           "SkipClaim", "Tolerance", "Verdict", "compare", "register", "run_claim",
           "symbolic_identity"]
