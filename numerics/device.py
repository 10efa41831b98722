"""Device choice and the float settings verification runs under."""
from __future__ import annotations

import torch

DEVICE_CHOICES = ("auto", "cpu", "cuda")


def resolve_device(name: str = "auto") -> torch.device:
    """``auto`` takes CUDA when present, else the CPU; ``cuda`` without CUDA is an error.

    Raises ``ValueError`` naming the parameter and the allowed values.
    """
    if name not in DEVICE_CHOICES:
        raise ValueError(f"device: {name!r} is not one of {', '.join(DEVICE_CHOICES)}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device: 'cuda' requested but torch finds no CUDA device; "
                         "allowed here: auto, cpu")
    return torch.device(name)


def verification_precision() -> None:
    """Turn TF32 off: verification compares against float64/float32 eps, not TF32's 10 bits."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def precision_flags() -> dict[str, bool | str]:
    """The float settings in force, for the run record."""
    return {
        "cuda_matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }
