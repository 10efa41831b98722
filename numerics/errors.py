"""Errors a simulation raises instead of returning numbers nobody should trust."""


class Diverged(RuntimeError):
    """A simulation produced NaN/Inf or left its stability region; the message says where."""
