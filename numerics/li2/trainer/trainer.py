"""The trainer: :class:`GroupTrainer` advances a batch of two-layer networks on one group
task (forward, loss, backward, evaluation, the loop and its checkpoints)."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from numerics import solves
from numerics.li2.group_task import group_task
from numerics.li2.train_splits import SampleSet, random_splits
from numerics.li2.trainer.compiled import _compile_options, _functional_gradients
from numerics.li2.trainer.config import Hyper, TrainConfig
from numerics.li2.trainer.history import History
from numerics.li2.trainer.init import _init_weights
from numerics.li2.trainer.step import _activate, _scratch, _times_derivative, full_float32
from numerics.li2.training_diagnostics import Snapshot, compute
from numerics.memory import release_free_heap
from numerics.optimizers import BatchedOptimizer

#: CPU: the gather's fresh output in pieces of at most this many bytes. glibc serves a block
#: below its dynamic mmap threshold (which grows to at most 32 MiB) from its heap, so a fresh
#: piece every step costs no page faults; a larger block is mapped, and zero-filled by the
#: kernel, on every allocation.
_PIECE_BYTES = 16 * 2**20


class GroupTrainer:
    """A batch of two-layer networks on one group task; :meth:`train` advances all of them.

    ``table``: the Cayley table (``M x M``); ``hyper``: the configurations; ``config``: what
    they share. Checkpoints: :meth:`save` / :meth:`load` (on the CPU a resumed run continues
    bit for bit as the uninterrupted one; CUDA's ``index_add_`` accumulates atomically, so
    there two runs agree to rounding unless ``torch.use_deterministic_algorithms(True)``).

    ``compile``: ``None`` (eager, the default), a ``torch.compile`` mode (``"default"``,
    ``"reduce-overhead"`` for CUDA graphs, ...) or a dict of ``torch.compile`` options
    (``{"backend": "eager"}`` traces without generating code). Not with the ridge top layer.
    A compiled run agrees with the eager one to rounding (its fused passes round once where
    the eager ones round twice).
    """

    def __init__(self, table, hyper: Hyper, config: TrainConfig, *,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32,
                 compile: str | Mapping[str, Any] | None = None) -> None:
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype: {dtype} must be torch.float32 or torch.float64")
        options = _compile_options(compile)
        if options is not None and config.top_layer == "ridge":
            raise ValueError("compile: not available with top_layer='ridge'")
        self.device, self.dtype = torch.device(device), dtype
        self.hyper, self.config = hyper, config
        self.task = group_task(table, device=self.device)
        M, K, B = self.task.M, config.K, len(hyper)
        self.train_set, self.test_set = random_splits(self.task, hyper.p, hyper.data_seed, dtype)
        inits = [_init_weights(s, M, K) for s in hyper.seed]
        opts = {"device": self.device, "dtype": dtype}
        self.W = (torch.stack([w for w, _ in inits]).to(**opts)
                  * self._per(hyper.init_scale)[:, None, None])
        self.Vt = (torch.stack([v for _, v in inits]).to(**opts)
                   * self._per(hyper.top_init)[:, None, None])
        self.beta = self._per(hyper.out_scale)
        self._scaled_output = any(b != 1 for b in hyper.out_scale)
        S = self.train_set
        m = S.size
        self.F = torch.empty(B, m, K, **opts)
        self.Ot = torch.empty(B, M, m, **opts)
        self.dOt = torch.empty(B, M, m, **opts)
        self.Y = self._one_hot(S)
        # the loss's constants and its residual buffer
        self._target = self.Y - 1.0 / M if config.loss == "mse_class" else self.Y
        self._resid = torch.empty(B, M, m, **opts)
        self._grad_scale = (S.weight * (2 / S.count)[:, None])[:, None, :]       # (B, 1, m)
        self._mean_weights = (S.weight / S.count[:, None])[:, :, None]          # (B, m, 1)
        # the gather: bags of two rows (h1, M + h2) of the (B 2M, K) view of W, in pieces;
        # flat indices with their offsets (a (rows, 2) input makes embedding_bag build both
        # anew on every call, about a third of its time)
        self._pairs = torch.stack((S.rows_left, S.rows_right), -1).view(-1)      # (2 B m,)
        self._bag_starts = torch.arange(0, 2 * min(B * m, self._piece_rows()), 2,
                                        device=self.device)
        self._pre_parts: list[torch.Tensor] = []
        self.gW = torch.empty_like(self.W)
        self.gV = torch.empty_like(self.Vt)
        self.params = {"W": self.W} if config.top_layer == "ridge" else {"W": self.W,
                                                                        "V": self.Vt}
        self.grads = {"W": self.gW, "V": self.gV}
        # two change buffers per parameter, used alternately: the last two updates stay
        self.deltas = {k: torch.zeros(2, *p.shape, **opts) for k, p in
                       (("W", self.W), ("V", self.Vt))}
        self.optimizer = BatchedOptimizer(config.optimizer, self.params,
                                          lr=self._per(hyper.lr), wd=self._per(hyper.eta))
        self.epoch = 0
        self.history = History()
        self._recorded = -1
        self._compiled = None if options is None else torch.compile(functools.partial(
            _functional_gradients, rows_left=S.rows_left, rows_right=S.rows_right,
            target=self._target, labels=S.target, weight=S.weight, count=S.count,
            beta=self.beta, activation=config.activation, loss=config.loss,
            scaled=self._scaled_output), **options)

    # --- set-up helpers -----------------------------------------------------------------------

    def _per(self, values: Sequence[float]) -> torch.Tensor:
        return torch.tensor(values, dtype=self.dtype, device=self.device)

    def _one_hot(self, S: SampleSet) -> torch.Tensor:
        Y = torch.nn.functional.one_hot(S.target, self.task.M).to(self.dtype)
        return (Y * S.weight[:, :, None]).mT.contiguous()

    @property
    def V(self) -> torch.Tensor:
        """:math:`V` (``(B, K, M)``), a view of the stored :math:`V^\\top`."""
        return self.Vt.mT

    @property
    def pre(self) -> torch.Tensor:
        """:math:`XW` (``(B, m, K)``) at the last training forward pass (assembled from the
        gather's pieces when there are several)."""
        if not self._pre_parts:
            self._train_forward()
        B, m, K = self.F.shape
        parts = self._pre_parts
        return (parts[0] if len(parts) == 1 else torch.cat(parts)).view(B, m, K)

    # --- forward, loss, backward ---------------------------------------------------------------

    def _piece_rows(self) -> int:
        """Rows of the gather's output per piece: all on CUDA (its caching allocator reuses
        the block), a bounded block on the CPU (see ``_PIECE_BYTES``)."""
        if self.device.type != "cpu":
            return self.F.shape[0] * self.F.shape[1]
        return max(1, _PIECE_BYTES // (self.config.K * self.F.element_size()))

    def _forward(self, pairs: torch.Tensor, F: torch.Tensor, Ot: torch.Tensor
                 ) -> list[torch.Tensor]:
        """``pre = X W`` (two-row bags, ``pairs`` their flat indices; returned in pieces),
        ``F = sigma(pre)``, ``Ot = beta V^T F^T``."""
        B, m, K = F.shape
        Wf, Ff = self.W.view(-1, K), F.view(-1, K)
        step = self._piece_rows()
        parts = []
        for start in range(0, B * m, step):
            bags = pairs[2 * start:2 * (start + step)]
            pre = torch.nn.functional.embedding_bag(bags, Wf, self._bag_starts[:len(bags) // 2],
                                                    mode="sum")
            _activate(pre, Ff[start:start + step], self.config.activation)
            parts.append(pre)
        torch.bmm(self.Vt, F.mT, out=Ot)
        if self._scaled_output:
            Ot.mul_(self.beta[:, None, None])
        return parts

    def _ridge_top_layer(self) -> None:
        r""":math:`V^\top \leftarrow Y_c^\top F(F^\top F+\lambda I)^{-1}` on the real samples,
        through the smaller of the two Gram matrices."""
        lam, S = self.config.ridge_lambda, self.train_set
        w = S.weight[:, :, None]
        Fw = self.F * w
        Yc = (self.Y.mT - 1.0 / self.task.M) * w                       # (B, m, M)
        m, K = Fw.shape[1:]
        if m <= K:
            A = Fw @ Fw.mT + lam * torch.eye(m, dtype=self.dtype, device=self.device)
            self.Vt.copy_(solves.solve_spd(A, Yc, name="ridge Gram matrix").mT @ Fw)
        else:
            A = Fw.mT @ Fw + lam * torch.eye(K, dtype=self.dtype, device=self.device)
            self.Vt.copy_(solves.solve_spd(A, Fw.mT @ Yc, name="ridge Gram matrix").mT)

    def _accuracy(self, Ot: torch.Tensor, target: torch.Tensor, weight: torch.Tensor
                  ) -> torch.Tensor:
        """Weighted count of samples whose largest output (the first, on ties, like
        ``argmax``) is the label; ``torch.max`` along the class axis is faster than
        ``argmax`` there."""
        hit = torch.max(Ot, 1).indices == target
        return (hit.to(self.dtype) * weight).sum(-1)

    def _train_loss(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Training loss and accuracy per configuration, :math:`\\partial L/\\partial O^\\top`
        into ``dOt``. Padding columns carry weight 0."""
        S, Ot, R, G = self.train_set, self.Ot, self._resid, self.dOt
        n, kind = S.count, self.config.loss
        if kind == "cross_entropy":
            logp = torch.log_softmax(Ot, dim=1)
            loss = -(logp * self.Y).sum((1, 2)) / n
            torch.sub(logp.exp_(), self.Y, out=G)
            G.mul_(self._grad_scale * 0.5)                      # w / n
        else:
            torch.sub(Ot, self._target, out=R)
            if kind == "mse_class":
                R.sub_(Ot.mean(1, keepdim=True))
            else:
                R.sub_(torch.bmm(R, self._mean_weights))        # the weighted sample mean
            torch.mul(R, self._grad_scale, out=G)               # 2 w r / n
            # (1/n) sum_i w_i |r_i|^2 = (1/2) sum R * G, the residual buffer is free now (a
            # BLAS dot product would be faster but sums 10^5 terms in a row: 10x the error)
            loss = 0.5 * R.mul_(G).sum((1, 2))
        return loss, self._accuracy(Ot, S.target, S.weight) / n

    def _backward(self) -> None:
        """Gradients of the training loss into ``gW``, ``gV`` from ``dOt`` (overwrites ``F``)."""
        dOt, F = self.dOt, self.F
        name = self.config.activation
        if self._scaled_output:
            dOt.mul_(self.beta[:, None, None])
        if self.config.top_layer == "trained":
            torch.bmm(dOt, F, out=self.gV)
        if name == "x2":
            dOt.mul_(2.0)       # sigma'(z) = 2 z: the 2 is folded into the small factor
        torch.bmm(dOt.mT, self.Vt, out=F)                             # dL/dF
        B, m, K = F.shape
        dF = F.view(B * m, K)
        start = 0
        for pre in self._pre_parts:
            stop = start + pre.shape[0]
            _times_derivative(pre, dF[start:stop], name)
            start = stop
        gWf = self.gW.view(-1, K)
        gWf.zero_()
        gWf.index_add_(0, self.train_set.rows_left, dF)
        gWf.index_add_(0, self.train_set.rows_right, dF)

    def _train_forward(self) -> tuple[torch.Tensor, torch.Tensor]:
        self._pre_parts = self._forward(self._pairs, self.F, self.Ot)
        if self.config.top_layer == "ridge":
            self._ridge_top_layer()
            torch.bmm(self.Vt, self.F.mT, out=self.Ot)
            if self._scaled_output:
                self.Ot.mul_(self.beta[:, None, None])
        return self._train_loss()

    def _compiled_step_gradients(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Loss, accuracy and gradients (into ``gW``, ``gV``) from the compiled function; the
        outputs are copied out (CUDA graphs reuse their output memory on the next call)."""
        loss, acc, gW, gV = self._compiled(self.W, self.Vt)
        self.gW.copy_(gW)
        self.gV.copy_(gV)
        return loss.clone(), acc.clone()

    def set_weights(self, W: torch.Tensor, V: torch.Tensor) -> None:
        r"""Copy in :math:`W` (``(B, 2M, K)``) and :math:`V` (``(B, K, M)``), e.g. a stored
        trajectory point to analyse; optimiser state and history are left as they are."""
        self.W.copy_(W)
        self.Vt.copy_(V.mT)

    def forward_snapshot(self) -> Snapshot:
        """The training forward pass at the current weights, for diagnostics of one's own."""
        with full_float32():
            self._train_forward()
        return self._snapshot()

    def gradients(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        r"""Training loss ``(B,)`` and its gradients in :math:`W` (``(B, 2M, K)``) and
        :math:`V` (``(B, K, M)``) at the current weights, without weight decay; no step."""
        with full_float32():
            loss, _ = self._train_forward()
            self._backward()
        return loss, self.gW.clone(), self.gV.mT.clone()

    # --- evaluation ----------------------------------------------------------------------------

    def _test_metrics(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Loss and accuracy on each configuration's test pairs, in chunks that reuse the
        training buffers (no extra ``n x K`` memory beyond the gather's pieces)."""
        S, m, B = self.test_set, self.train_set.size, len(self.hyper)
        M, K = self.task.M, self.config.K
        sq = torch.zeros(B, dtype=self.dtype, device=self.device)
        sum_r = torch.zeros(B, M, dtype=self.dtype, device=self.device)
        correct = torch.zeros_like(sq)
        rows_l, rows_r = S.rows_left.view(B, -1), S.rows_right.view(B, -1)
        for start in range(0, S.size, m):
            stop = min(start + m, S.size)
            c = stop - start
            F, Ot = _scratch(self.F, B, c, K), _scratch(self.Ot, B, M, c)
            pairs = torch.stack((rows_l[:, start:stop], rows_r[:, start:stop]), -1)
            self._forward(pairs.view(-1), F, Ot)
            w = S.weight[:, start:stop]
            target = S.target[:, start:stop]
            Y = torch.nn.functional.one_hot(target, M).to(self.dtype).mT * w[:, None, :]
            if self.config.loss == "cross_entropy":
                sq -= (torch.log_softmax(Ot, dim=1) * Y).sum((1, 2))
            elif self.config.loss == "mse_class":
                r = Ot - Ot.mean(1, keepdim=True) - (Y - 1.0 / M)
                sq += (r.square().sum(1) * w).sum(-1)
            else:
                r = (Ot - Y) * w[:, None, :]
                sq += r.square().sum((1, 2))
                sum_r += r.sum(-1)
            correct += self._accuracy(Ot, target, w)
        n = S.count
        loss = sq / n
        if self.config.loss == "mse_sample":
            loss = loss - sum_r.square().sum(-1) / n**2   # (1/n) sum ||r_i - rbar||^2
        return loss, correct / n

    # --- the loop ------------------------------------------------------------------------------

    def _snapshot(self) -> Snapshot:
        c, k = self.config, self.optimizer.steps

        def pair(name: str):
            # step s wrote its change into buffer (s - 1) % 2
            if k < 2:
                return None
            buf = self.deltas[name]
            return buf[(k - 1) % 2], buf[k % 2]

        return Snapshot(epoch=self.epoch, M=self.task.M, activation=c.activation, W=self.W,
                        Vt=self.Vt, pre=self.pre, F=self.F, Ot=self.Ot, Y=self.Y,
                        train=self.train_set, dW=pair("W"),
                        dV=pair("V") if c.top_layer == "trained" else None,
                        gram_nodes=c.gram_nodes, gram_samples=c.gram_samples,
                        spectrum_top=c.spectrum_top)

    def _deltas_needed(self, step: int, end: int) -> bool:
        """Whether step ``step`` (which makes epoch ``step``) must keep its change: the
        ``updates`` group at epoch :math:`t` reads the changes of steps :math:`t` and
        :math:`t-1`; it runs at multiples of its interval and at a run's last epoch (the last
        two steps of every call keep theirs, so a resumed run finds them in the checkpoint)."""
        if "updates" not in self.config.diagnostics:
            return False
        every = self.config.every("updates")
        return step % every in (0, every - 1) or step >= end - 1

    def train(self, epochs: int, *, record_last: bool = True) -> History:
        """Take ``epochs`` full-batch steps on every configuration; returns the history.

        Epoch :math:`t` (the state after :math:`t` steps) is recorded once: the training loss
        and accuracy always, the test metrics when :math:`t` is a multiple of ``eval_every``,
        each diagnostics group when it is a multiple of its interval, and all of them at the last
        epoch when ``record_last``. Pass ``record_last=False`` for a run that will be resumed,
        so that its history matches the uninterrupted run's exactly.
        """
        if epochs < 0:
            raise ValueError(f"epochs: {epochs} must be >= 0")
        with full_float32():
            return self._train(epochs, record_last)

    def _train(self, epochs: int, record_last: bool) -> History:
        c, end = self.config, self.epoch + epochs
        while True:
            t = self.epoch
            last = t == end
            # an epoch is recorded once; the end of a run that will be resumed not at all
            do_train = t > self._recorded and (not last or record_last)
            do_eval = do_train and (t % c.eval_every == 0 or last)
            groups = [g for g in c.diagnostics if do_train and (t % c.every(g) == 0 or last)]
            if do_eval:   # first: the test pass uses the training buffers as scratch
                test_loss, test_acc = self._test_metrics()
                self.history.add("test_loss", t, test_loss)
                self.history.add("test_acc", t, test_acc)
                if self.device.type == "cpu":
                    # the test pass's pieces, freed around the history's small values, stay
                    # resident otherwise: about one n x K block per pass (numerics.memory)
                    release_free_heap()
            eager = last or do_eval or groups or self._compiled is None
            if eager and (not last or do_train):
                loss, acc = self._train_forward()
                if groups:
                    for name, value in compute(groups, self._snapshot()).items():
                        self.history.add(name, t, value)
            elif not last:
                loss, acc = self._compiled_step_gradients()
            if do_train:
                self.history.add("train_loss", t, loss)
                self.history.add("train_acc", t, acc)
                self._recorded = t
            if last:
                return self.history
            if eager:
                self._backward()
            k = self.optimizer.steps
            step_deltas = ({name: buf[k % 2] for name, buf in self.deltas.items()}
                           if self._deltas_needed(k + 1, end) else None)
            self.optimizer.step(self.params, self.grads, step_deltas)
            self.epoch += 1

    # --- checkpoints ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs, as plain containers and CPU tensors."""
        return {"hyper": dataclasses.asdict(self.hyper), "config": self.config.as_dict(),
                "table": self.task.table.cpu(), "dtype": str(self.dtype).removeprefix("torch."),
                "epoch": self.epoch, "W": self.W.cpu(), "Vt": self.Vt.cpu(),
                "deltas": {k: v.cpu() for k, v in self.deltas.items()},
                "optimizer": {"steps": self.optimizer.steps,
                              "state": {k: v.cpu() for k, v in self.optimizer.state.items()}},
                "history": self.history.state_dict(), "recorded": self._recorded}

    @classmethod
    def from_state_dict(cls, d: dict[str, Any], *, device: torch.device | str = "cpu"
                        ) -> GroupTrainer:
        hyper = Hyper(**{k: tuple(v) for k, v in d["hyper"].items()})
        trainer = cls(d["table"], hyper, TrainConfig.from_dict(d["config"]), device=device,
                      dtype=getattr(torch, d["dtype"]))
        trainer.W.copy_(d["W"])
        trainer.Vt.copy_(d["Vt"])
        for k, v in d["deltas"].items():
            trainer.deltas[k].copy_(v)
        trainer.optimizer.load_state_dict(d["optimizer"])
        trainer.epoch = int(d["epoch"])
        trainer.history = History.from_state_dict(d["history"], trainer.device)
        trainer._recorded = int(d["recorded"])
        return trainer

    def save(self, path: str | Path) -> None:
        torch.save(self.state_dict(), path)

    @classmethod
    def load(cls, path: str | Path, *, device: torch.device | str = "cpu") -> GroupTrainer:
        return cls.from_state_dict(torch.load(path, map_location="cpu", weights_only=True),
                                   device=device)
