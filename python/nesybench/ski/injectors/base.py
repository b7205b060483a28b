"""The common interface of predictors: ``configure``, ``fit``, ``predict`` on ensembles.

A predictor describes one network architecture; :meth:`Predictor.fit` trains ``E``
independent members of it at once (one per seed) with :func:`nesybench.ski.ensemble.train`.
A new injector is one more subclass (``init_params`` and ``forward``; optionally ``aux`` and
``penalty`` for loss-based injection) registered in :data:`nesybench.ski.injectors.INJECTORS`.
"""
from __future__ import annotations

import warnings

import numpy as np
import torch

from ...errors import NesyError
from ...io import derive_seed
from .. import ensemble, native, stopping
from ..ensemble import Members, TrainConfig, dense, glorot


#: the trainers: the native kernel (default) and PyTorch autograd (the reference)
ENGINES = ("native", "torch")


class Predictor:
    """An ensemble of networks for a ``n_features`` → ``n_classes`` task.

    Options (``configure``): ``hidden`` (list of ReLU layer widths), ``epochs``,
    ``batch_size``, ``lr``, ``engine`` (:data:`ENGINES`), and each subclass's own
    (``OPTIONS``). A subclass also gives its network's kernel layout (``plan``, see
    :mod:`nesybench.ski.native`) for the native trainer.
    """

    name = "predictor"
    OPTIONS: dict = {}
    #: options whose value is one of a few names
    CHOICES: dict = {}

    def __init__(self, n_features: int, n_classes: int, hidden=(16, 8), knowledge=None,
                 **options):
        self.n_features, self.n_classes = n_features, n_classes
        self.hidden = list(hidden)
        self.knowledge = knowledge
        self.train_cfg = TrainConfig()
        self.params: list[torch.Tensor] | None = None
        self.opts = dict(self.OPTIONS)
        self.configure(**options)

    def configure(self, **options) -> "Predictor":
        for key, value in options.items():
            if key == "hidden":
                self.hidden = list(value)
            elif key in ("epochs", "batch_size", "lr", "val_fraction"):
                setattr(self.train_cfg, key, type(getattr(self.train_cfg, key))(value))
            elif key == "patience":
                if value is not None and (isinstance(value, bool) or int(value) < 1):
                    raise NesyError(f"{self.name}: patience must be a whole number >= 1 or "
                                    f"none, not {value!r}", field=key)
                self.train_cfg.patience = None if value is None else int(value)
            elif key == "engine":
                if value not in ENGINES:
                    raise NesyError(f"{self.name}: engine must be one of {', '.join(ENGINES)}, "
                                    f"not {value!r}", field="engine")
                self.train_cfg.engine = value
            elif key in self.opts:
                self.opts[key] = self._checked(key, value)
            else:
                raise NesyError(f"{self.name}: unknown option {key!r} (known: hidden, epochs, "
                                f"batch_size, lr, engine, patience, val_fraction"
                                f"{''.join(', ' + k for k in self.opts)})",
                                field=key)
        return self

    def _checked(self, key, value):
        """An option value of the default's type (or one of ``CHOICES[key]``)."""
        choices = self.CHOICES.get(key)
        if choices is not None:
            if value not in choices:
                raise NesyError(f"{self.name}: option {key} must be one of "
                                f"{', '.join(map(str, choices))}, not {value!r}", field=key)
            return value
        default = self.OPTIONS[key]
        if default is None and value is not None:       # "automatic" or a whole number
            if isinstance(value, bool) or not isinstance(value, (int, str)) \
                    or not str(value).lstrip("-").isdigit():
                raise NesyError(f"{self.name}: option {key} must be a whole number, not "
                                f"{value!r}", field=key)
            return int(value)
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            try:
                return type(default)(value)
            except (TypeError, ValueError):
                raise NesyError(f"{self.name}: option {key} must be a number, not {value!r}",
                                field=key) from None
        return value

    # -- to be provided by subclasses -------------------------------------------------
    def init_member(self, gen: torch.Generator) -> list[torch.Tensor]:
        raise NotImplementedError

    def forward(self, params, x):
        raise NotImplementedError

    def native_unsupported(self) -> str | None:
        """Why the native kernel cannot train this network as configured (``fit`` then
        uses the PyTorch trainer), or None."""
        return None

    def laid_out(self) -> "Predictor":
        """Make sure the layout that ``init_member`` records (KBANN's and KINS's rule
        network) exists: drawing one throw-away member builds it."""
        if not hasattr(self, "_net"):
            self.init_member(torch.Generator().manual_seed(0))
        return self

    # -- ensemble ---------------------------------------------------------------------
    def init_params(self, seeds: list[int]) -> list[torch.Tensor]:
        """Stacked initial parameters, member ``e`` drawn from its own ``seeds[e]``."""
        per = [self.init_member(torch.Generator().manual_seed(int(s) % (2**63)))
               for s in seeds]
        return [torch.stack(ts) for ts in zip(*per)]

    def fit(self, data: Members, seeds: list[int], progress=None) -> "Predictor":
        """Train one member per seed on ``data`` (one member each) as a batched ensemble."""
        if len(seeds) != data.size:
            raise NesyError(f"{len(seeds)} seeds for {data.size} members")
        self.params = self.init_params(seeds)
        engine = self.train_cfg.engine
        if engine == "native" and not native.available():
            # no C compiler: the autograd trainer computes the same model (last-bit
            # differences in summation order), so run it rather than fail every cell
            warnings.warn("no C compiler for the native SKI trainer: using --engine torch",
                          RuntimeWarning, stacklevel=2)
            engine = "torch"
        why = self.native_unsupported() if engine == "native" else None
        if why:
            warnings.warn(f"{why}: using --engine torch", RuntimeWarning, stacklevel=2)
            engine = "torch"
        trainer = native.train if engine == "native" else ensemble.train
        cfg = self.train_cfg
        stopper = None
        if cfg.patience is not None:
            data, val_rows = stopping.split_validation(data, seeds, cfg.val_fraction)
            stopper = stopping.EarlyStopping(self, data, val_rows, cfg.patience)
        trainer(self, self.params, data, cfg, [derive_seed("order", s) for s in seeds],
                progress=progress, on_epoch=stopper)
        self.epochs_trained = np.full(data.size, cfg.epochs) if stopper is None \
            else stopper.epochs_trained(cfg.epochs)
        if stopper is not None:
            stopper.apply(self.params)
        return self

    def predict(self, X: torch.Tensor) -> torch.Tensor:
        """Predicted class of every member on ``X [N, D]``: long [E, N]."""
        if self.params is None:
            raise NesyError(f"{self.name}: predict before fit")
        return ensemble.predict(self, self.params, X)

    def accuracy(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (self.predict(X) == y.unsqueeze(0)).float().mean(1)


class MLPMixin:
    """ReLU hidden layers and a linear output (softmax is in the loss)."""

    def mlp_init(self, gen, sizes):
        out = []
        for i, o in zip(sizes[:-1], sizes[1:]):
            out += [glorot(gen, i, o), torch.zeros(o)]
        return out

    def plan(self):
        """The kernel plan of this MLP (:mod:`nesybench.ski.native`)."""
        plan = native.Plan(self.n_features)
        native.mlp_plan(plan, 0, [self.n_features, *self.hidden, self.n_classes])
        return plan

    @staticmethod
    def mlp_forward(params, h, relu_last=False):
        n = len(params) // 2
        for i in range(n):
            h = dense(h, params[2 * i], params[2 * i + 1])
            if i < n - 1 or relu_last:
                h = torch.relu(h)
        return h
