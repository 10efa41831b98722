"""The records of a training run: :class:`History`."""
from __future__ import annotations

from typing import Any

import torch


class History:
    """Records by name: a list of epochs and a list of ``(B, ...)`` tensors (kept on device
    until :meth:`series` stacks them)."""

    def __init__(self) -> None:
        self.records: dict[str, tuple[list[int], list[torch.Tensor]]] = {}

    def add(self, name: str, epoch: int, value: torch.Tensor) -> None:
        epochs, values = self.records.setdefault(name, ([], []))
        epochs.append(epoch)
        values.append(value)

    def names(self) -> list[str]:
        return sorted(self.records)

    def series(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """``(epochs (D,), values (D, B, ...))`` on the CPU, float64."""
        if name not in self.records:
            raise KeyError(f"history: no series {name!r}; recorded: {', '.join(self.names())}")
        epochs, values = self.records[name]
        return torch.tensor(epochs), torch.stack(values).detach().to("cpu", torch.float64)

    def state_dict(self) -> dict[str, Any]:
        return {k: (list(e), [v.detach().cpu() for v in vs])
                for k, (e, vs) in self.records.items()}

    @classmethod
    def from_state_dict(cls, d: dict[str, Any], device: torch.device) -> History:
        h = cls()
        h.records = {k: (list(e), [v.to(device) for v in vs]) for k, (e, vs) in d.items()}
        return h

