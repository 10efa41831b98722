"""The command line: ``python -m verify`` and ``theory-verify`` (sub-commands in
:mod:`verify.cli.commands`, the ``sweep`` sub-command in :mod:`verify.cli.sweep`, shared argument
types in :mod:`verify.cli.arguments`)."""
from verify.cli.arguments import UsageError
from verify.cli.commands import main

__all__ = ["UsageError", "main"]
