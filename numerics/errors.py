"""Errors a simulation raises instead of returning numbers nobody should trust, and the check
of the settings every iterative ascent shares (so that each names the bad one alike)."""


class Diverged(RuntimeError):
    """A simulation produced NaN/Inf or left its stability region; the message says where."""


def check_ascent_settings(lr: float, max_steps: int, gtol: float, *, lr_name: str = "lr"
                          ) -> None:
    """Raise ``ValueError`` naming the first bad setting: the step ``lr`` (called ``lr_name``)
    must be > 0, ``max_steps`` >= 1 and the gradient tolerance ``gtol`` > 0 (NaN fails)."""
    if not lr > 0:
        raise ValueError(f"{lr_name}: {lr} must be > 0")
    if max_steps < 1:
        raise ValueError(f"max_steps: {max_steps} must be >= 1")
    if not gtol > 0:
        raise ValueError(f"gtol: {gtol} must be > 0")
