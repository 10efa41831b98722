"""What a run records about where and how it ran, so a result can be reproduced."""
from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

from numerics.device import precision_flags

PACKAGES = ("theory-verify", "torch", "sympy", "numpy", "scipy", "mpmath", "hypothesis")


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_revision() -> dict[str, Any] | None:
    """The code's git revision and whether the work tree was dirty (None outside git)."""
    root = Path(__file__).resolve().parent.parent
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=5, check=True).stdout.strip() != ""
    except (OSError, subprocess.SubprocessError):
        return None
    return {"revision": rev, "dirty": dirty}


def device_description(device: torch.device) -> dict[str, Any]:
    info: dict[str, Any] = {"type": device.type, "torch_threads": torch.get_num_threads(),
                            "cpu_count": os.cpu_count(), "machine": platform.machine(),
                            "platform": platform.platform()}
    if device.type == "cuda":
        info["name"] = torch.cuda.get_device_name(device)
        info["cuda"] = torch.version.cuda
    return info


def run_metadata(*, device: torch.device, dtype: torch.dtype, seed: int, fidelity: str,
                 argv: list[str] | None = None, threads: int | None = None) -> dict[str, Any]:
    """The run block of a results file; ``threads``: the torch threads each claim ran with
    (a pool's workers set their own; ``device.torch_threads`` is this process's)."""
    return {
        "claim_threads": torch.get_num_threads() if threads is None else threads,
        "fidelity": fidelity,
        "device": device_description(device),
        "dtype": str(dtype).removeprefix("torch."),
        "seed": seed,
        "precision_flags": precision_flags(),
        "versions": package_versions(),
        "git": git_revision(),
        "argv": list(sys.argv if argv is None else argv),
    }
