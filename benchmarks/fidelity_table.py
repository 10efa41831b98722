"""The README's table of check times per claim and fidelity, from verify/measured_times.json.

    python benchmarks/fidelity_table.py > /tmp/table.md

Cells: measured seconds; ``~`` an extrapolation (not run); ``>=`` a run stopped there; ``*``
measured on a machine loaded by other sessions (an upper bound); ``= quick`` a claim without
its own medium level (medium runs its quick one); blank: not measured.
"""
from __future__ import annotations

import json

from verify import registry
from verify.estimates import SHIPPED, describe_seconds


def _cell(table: dict, claim_id: str) -> str:
    entry = table.get("claims", {}).get(claim_id)
    if entry is None:
        return ""
    mark = "~" if entry.get("model") else ">=" if entry.get("at_least") else ""
    loaded = "*" if entry.get("loaded") else ""
    return f"{mark}{describe_seconds(float(entry['seconds']))}{loaded}"


def main() -> None:
    registry.load_builtin_claims()
    shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    columns = [("quick", "cpu"), ("medium", "cpu"), ("full", "cpu"), ("full", "cuda")]
    labels = {c: shipped.get(c[0], {}).get(c[1], {}).get("label", "") for c in columns}
    print("| claim | " + " | ".join(f"{f} ({labels[(f, d)] or d})" for f, d in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for claim in registry.all_claims():
        cells = []
        for fidelity, device in columns:
            cell = _cell(shipped.get(fidelity, {}).get(device, {}), claim.id)
            if fidelity == "medium" and not claim.has_own_medium:
                cell = "= quick"
            cells.append(cell)
        name = f"`{claim.id}`" + (" (training)" if "training" in claim.tags else "")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
