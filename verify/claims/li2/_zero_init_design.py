r"""``li2.fig14-zero-init``'s full-fidelity design (issue 28; :mod:`verify.design`): the point
function that keeps each run's test-accuracy trajectory, so that where each run stopped can be
replayed through the stated rule, the merge of a sequential design's looks (seed batches of
one configuration) into one record, and that replay.

**Early decision per run.** A grokking time is the first logged epoch with test accuracy
:math:`\ge a` (:func:`numerics.li2.grokking_time.grokking_times`), i.e. the epoch at which
:class:`verify.design.HeldAbove` ``("test_acc", a, window=1)`` decides 'reached'
(:func:`early_rules`). A configuration's seeds (one batch) stop at the end of the first chunk
at which every run's rule has decided at the highest threshold
(:func:`numerics.li2.grokking_time.train_until`), or at the budget. A first crossing is
never revised by later epochs, so the early stop changes no recorded time: its disagreement
with the full budget is 0 by construction, and :func:`replay_mismatches` checks on the
recorded trajectories that every run stopped where the rule says.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from numerics.li2.init_sweep_points import _trainer
from numerics.li2.sweep_points import decode, encode, grokking_record
from verify import design


def zero_init_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`numerics.li2.init_sweep_points.top_layer_grokking_point`'s record of one
    configuration (its seeds on the batch axis), and, where the point asks for it
    (``trajectory``), the logged test accuracy (``test_acc``: ``(D, B)``) at the logged
    epochs (``test_epochs``: ``(D,)``) and the number of epochs trained (``trained``)."""
    trainer = _trainer(point)
    record = grokking_record(trainer.train, point)
    if point.get("trajectory"):
        epochs, acc = trainer.history.series("test_acc")
        record |= {"test_acc": encode(acc.to(torch.float32)),
                   "test_epochs": encode(torch.as_tensor(epochs).to(torch.int64)),
                   "trained": int(trainer.epoch)}
    return record


def merge(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The records of one configuration's seed batches (looks, in seed order) as one record:
    per-seed values concatenated; a time censored in a shorter batch keeps its own bound; the
    trajectories, where kept, per batch (``batches``), one batch included."""
    cat = lambda key: encode(torch.cat([decode(r[key]) for r in records]))  # noqa: E731
    times = []
    for i in range(len(records[0]["times"])):
        rows = [r["times"][i] for r in records]
        times.append({"epochs": encode(torch.cat([decode(g["epochs"]) for g in rows])),
                      "censored": encode(torch.cat([decode(g["censored"]) for g in rows])),
                      "budget": max(g["budget"] for g in rows),
                      "resolution": max(g["resolution"] for g in rows)})
    out = {"finite": all(r["finite"] for r in records), "final_train": cat("final_train"),
           "final_loss": cat("final_loss"), "times": times}
    if all("test_acc" in r for r in records):
        out["batches"] = [{k: r[k] for k in ("test_acc", "test_epochs", "trained")}
                          for r in records]
    return out


def early_rules(thresholds: Sequence[float]) -> list[design.HeldAbove]:
    """The per-run rule at each threshold: test accuracy :math:`\\ge a` at one logged epoch
    (the claim's :math:`t_a`)."""
    return [design.HeldAbove("test_acc", float(a), window=1) for a in thresholds]


def replay_mismatches(record: Mapping[str, Any], thresholds: Sequence[float], budget: int,
                      chunk: int) -> tuple[int, int]:
    """(runs that stopped or were timed elsewhere than :func:`verify.design.decide` says on
    their recorded trajectories, runs checked), over a record of :func:`merge` whose batches
    kept their trajectories. A run is right when, at every threshold, its recorded time is the
    step the rule decides at (censored: the rule is undecided on the whole trajectory, and the
    time is the last logged epoch), and its batch trained to the end of the first chunk at
    which every run's rule had decided at the highest threshold (or to the budget when some
    run never did)."""
    batches = record.get("batches") or [record]
    rules = early_rules(thresholds)
    times = [(decode(g["epochs"]), decode(g["censored"])) for g in record["times"]]
    wrong = checked = offset = 0
    for b in batches:
        acc, epochs = decode(b["test_acc"]), decode(b["test_epochs"]).tolist()
        S = acc.shape[1]
        last_known, all_decided = 0, True
        bad = [False] * S
        for s in range(S):
            for i, rule in enumerate(rules):
                d = design.decide(rule, acc[:, s].tolist(), steps=epochs)
                t, c = float(times[i][0][offset + s]), bool(times[i][1][offset + s])
                ok = (not c and t == float(d.step)) if d.decided else \
                    (c and t == float(epochs[-1]))
                bad[s] = bad[s] or not ok
                if i == len(rules) - 1:
                    if d.decided:
                        last_known = max(last_known, int(epochs[d.known_at]))
                    else:
                        all_decided = False
        stop = (min(budget, chunk * -(-max(last_known, 1) // chunk)) if all_decided
                else budget)
        wrong += S if int(b["trained"]) != stop else sum(bad)
        checked += S
        offset += S
    return wrong, checked
