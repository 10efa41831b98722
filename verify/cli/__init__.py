"""The command line: ``python -m verify`` and ``theory-verify`` (sub-commands in :mod:`verify.cli.commands`,
the ``sweep`` sub-command in :mod:`verify.cli.sweep`, shared argument types in
:mod:`verify.cli.arguments`)."""
from verify.cli.commands import UsageError, main

__all__ = ["UsageError", "main"]
