"""The native SKI trainer: ``kernel.c`` built once per machine, a network *plan*, and
:func:`train`, a drop-in for :func:`nesybench.ski.ensemble.train`.

Why a kernel of our own: at the paper's batch of 32 a step of one of these networks is a few
hundred thousand multiply-adds, and PyTorch spends more time around its ~20 small batched
products per step (dispatch, one memory pass per elementwise op, small-matrix GEMM
efficiency) than in them. ``kernel.c`` runs a member's whole epoch in cache, skips the zero
inputs (census: 8.8 non-zeros of 85 features; splice: 60 of 240) and fuses the loss and
Adam. PyTorch's trainer (``engine="torch"``) stays the reference it is tested against.

The kernel is compiled with the system C compiler (``$CC``, else ``cc``; the set-up already
needs one for SWI-Prolog) into ``$NESYBENCH_KERNELS`` (default: ``kernels/`` in the user cache
folder, :func:`nesybench.paths.cache_root`), keyed by the source, the flags and the CPU, so
it is built once per machine; ``make setup`` builds it. ``$NESYBENCH_KERNEL_TARGET`` picks another target CPU (``-march``, e.g.
``x86-64-v3`` for any AVX2 + FMA machine; ``default`` for the compiler's own). Its numbers
are the same on every machine (see the comment at the top of
``kernel.c``) and differ from the PyTorch trainer's only by float summation order.

A plan lays a network out for the kernel: ``width`` state rows (one per unit, each a row of
samples), ops (:data:`OP_FIELDS`), and for every PyTorch parameter tensor the flat index of
each of its elements in the kernel's parameter vector (dense weights output-major, the
sparse input op's input-major with its outputs padded to a multiple of :data:`LANES`).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..paths import cache_root
from ..errors import NesyError

SOURCE = Path(__file__).with_name("kernel.c")
LANES = 16
FLAGS = ("-O3", "-march=native", "-ffp-contract=off", "-fno-math-errno", "-fPIC", "-shared")
#: the environment variable naming the build's target CPU (``-march``; ``default``: the
#: compiler's default target); unset: this machine's (``native``)
TARGET_ENV = "NESYBENCH_KERNEL_TARGET"
OP_FIELDS = ("kind", "act", "in0", "nin", "out0", "nout", "base_kind", "base_off", "w_off",
             "mask_off", "idx_off")
KINDS = {"input": 0, "dense": 1, "copy": 2}
ACTS = {"id": 0, "relu": 1, "sigmoid": 2}

_LIBS: dict = {}


def _pad(n: int) -> int:
    return -(-n // LANES) * LANES


# -- building the kernel ----------------------------------------------------------------

def kernel_dir() -> Path:
    """``$NESYBENCH_KERNELS``, else ``kernels/`` in the user cache folder."""
    return Path(os.environ.get("NESYBENCH_KERNELS") or cache_root() / "kernels")


def _cpu_key() -> str:
    """The CPU's identity for ``-march=native`` (a build for one CPU may not run on
    another): model name and flags from /proc/cpuinfo where there is one."""
    try:
        text = Path("/proc/cpuinfo").read_text()
        lines = [ln for ln in text.splitlines()
                 if ln.startswith(("model name", "flags", "Features", "CPU part"))]
        return "\n".join(sorted(set(lines)))
    except OSError:
        return platform.processor() + platform.machine()


def default_flags() -> tuple[str, ...]:
    """:data:`FLAGS`, with ``-march`` from ``$NESYBENCH_KERNEL_TARGET`` where it is set (e.g.
    ``x86-64-v3``: a build that runs on any AVX2 + FMA CPU; the numbers are the same for
    every target, only the speed differs)."""
    target = os.environ.get(TARGET_ENV, "").strip() or "native"
    return tuple(f"-march={target}" if f.startswith("-march") else f for f in FLAGS
                 if target != "default" or not f.startswith("-march"))


def library_path(flags: tuple[str, ...] | None = None) -> Path:
    flags = flags or default_flags()
    cc = os.environ.get("CC") or "cc"
    key = hashlib.sha256("\0".join([SOURCE.read_text(), cc, *flags, _cpu_key(),
                                    platform.machine()]).encode()).hexdigest()[:16]
    return kernel_dir() / f"ski_kernel_{key}.so"


def compiler() -> str | None:
    """The C compiler the kernel is built with (``$CC`` or ``cc``), or None if absent."""
    cc = os.environ.get("CC") or "cc"
    return cc if shutil.which(cc) is not None else None


def available(flags: tuple[str, ...] | None = None) -> bool:
    """Whether the native trainer can run here: its build is cached or a compiler exists."""
    return library_path(flags or default_flags()).is_file() or compiler() is not None


def build(verbose: bool = False, flags: tuple[str, ...] | None = None) -> Path:
    """Compile ``kernel.c`` unless this machine's build is cached; returns its path.
    ``flags``: the compiler's (tests build without ``-march=native`` to check that the
    numbers do not depend on the instruction set).

    Raises :class:`NesyError` when there is no C compiler or it fails."""
    flags = flags or default_flags()
    path = library_path(flags)
    if path.is_file():
        return path
    cc = compiler()
    if cc is None:
        raise NesyError(f"the native SKI trainer needs a C compiler "
                        f"({os.environ.get('CC') or 'cc'!r} not found; set CC or install "
                        "gcc/clang), or use --engine torch (slower; numbers differ from the "
                        "native trainer's in the last bits)", field="--engine")
    path.parent.mkdir(parents=True, exist_ok=True)
    # concurrent workers may build at once: each into its own file, then an atomic rename
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=path.parent)
    os.close(fd)
    try:
        res = subprocess.run([cc, *flags, "-o", tmp, str(SOURCE), "-lm"],
                             capture_output=True, text=True)
        if res.returncode != 0:
            raise NesyError(f"building the native SKI trainer failed ({cc} {' '.join(flags)}; "
                            "--engine torch needs no compiler):"
                            f"\n{res.stderr.strip()}", field="--engine")
        if verbose and res.stderr.strip():
            print(res.stderr.strip())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def library(flags: tuple[str, ...] | None = None):
    """The kernel (built if needed) as a ctypes library, loaded once per process."""
    flags = flags or default_flags()
    if flags not in _LIBS:
        lib = ctypes.CDLL(str(build(flags=flags)))
        f = lib.ski_train_epoch
        i64, ptr, f32 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_float
        f.argtypes = [i64, i64, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr,
                      i64, ptr, i64, ptr, i64, ptr, ptr, i64, i64, i64, i64, f32, f32, f32, f32,
                      f32]
        f.restype = ctypes.c_int
        _LIBS[flags] = lib
    return _LIBS[flags]


# -- plans ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Region:
    """State rows ``[start, start + n)``."""

    start: int
    n: int


@dataclass
class Plan:
    """A network laid out for the kernel (see the module docstring)."""

    n_features: int
    width: int = 0
    n_params: int = 0
    ops: list = field(default_factory=list)
    masks: list = field(default_factory=list)
    copy_idx: list = field(default_factory=list)
    #: the input op's output width (padded)
    input_width: int = 0
    logits: Region | None = None
    #: per PyTorch parameter tensor (in the model's order): flat kernel index of each element
    places: dict = field(default_factory=dict)

    # allocation -------------------------------------------------------------------------
    def region(self, n: int) -> Region:
        r = Region(self.width, n)
        self.width += n
        return r

    def _params(self, n: int) -> int:
        off = self.n_params
        self.n_params += n
        return off

    def _mask(self, segments: list[Region], start: int, npad: int) -> int:
        m = np.zeros(npad, np.float32)
        for s in segments:
            m[s.start - start:s.start - start + s.n] = 1.0
        off = len(self.masks)
        self.masks.extend(m.tolist())
        return off

    def _op(self, **f) -> None:
        self.ops.append([int(f.get(k, 0)) for k in OP_FIELDS])

    # ops ----------------------------------------------------------------------------------
    def input(self, segments: list[int], act: str = "id") -> list[Region]:
        """``act(b + x @ W)`` into segments of the given widths, packed (the kernel computes
        this op's outputs 16 at a time: only their total is padded, with masked rows no
        other op reads); returns the segments. Its weight and bias are placed with
        :meth:`place_input`."""
        start = self.width
        regs, off = [], start
        for n in segments:
            regs.append(Region(off, n))
            off += n
        npad = _pad(off - start)
        self.width = start + npad
        w = self._params(self.n_features * npad)
        b = self._params(npad)
        self._op(kind=KINDS["input"], act=ACTS[act], in0=0, nin=self.n_features, out0=start,
                 nout=npad, base_kind=1, base_off=b, w_off=w,
                 mask_off=self._mask(regs, start, npad))
        self._input = (start, npad, w, b)
        self.input_width = npad
        return regs

    def dense(self, out: Region, inputs: list[Region], act: str, base: Region | None = None,
              ) -> tuple[int, int, int]:
        """``out = act(base + S[inputs] @ W)``; ``inputs`` consecutive regions (their span
        is the op's input range), ``base`` a region of pre-activations (``out.n`` rows) or
        None for a bias of its own. Returns (weight offset, stride for :meth:`place`, bias
        offset or -1)."""
        in0 = inputs[0].start if inputs else 0
        nin = sum(r.n for r in inputs)
        if inputs and inputs[-1].start + inputs[-1].n - in0 != nin:
            raise ValueError("dense inputs must be consecutive regions")
        if base is not None and base.n != out.n:
            raise ValueError("a dense op's base must have one row per output")
        w = self._params(nin * out.n)
        if base is None:
            b = self._params(out.n)
            bk, boff = 1, b
        else:
            b, bk, boff = -1, 2, base.start
        self._op(kind=KINDS["dense"], act=ACTS[act], in0=in0, nin=nin, out0=out.start,
                 nout=out.n, base_kind=bk, base_off=boff, w_off=w)
        return w, nin, b

    def copy(self, out: Region, sources: list[int]) -> None:
        off = len(self.copy_idx)
        self.copy_idx.extend(list(sources) + [-1] * (out.n - len(sources)))
        self._op(kind=KINDS["copy"], out0=out.start, nout=out.n, idx_off=off)

    # parameter placement ------------------------------------------------------------------
    def place(self, key: int, off: int, stride: int, rows, cols) -> None:
        """PyTorch parameter ``key`` is a dense op's weight ``[len(cols), len(rows)]`` when
        ``rows`` is given, else a bias ``[len(cols)]``: element (o, i) lives at ``off +
        cols[o] * stride + rows[i]`` (dense weights are output-major in the kernel, ``stride``
        the op's input count; rows and cols relative to its first input and output)."""
        cols = torch.as_tensor(cols, dtype=torch.long)
        if rows is None:
            self.places[key] = off + cols
        else:
            rows = torch.as_tensor(rows, dtype=torch.long)
            self.places[key] = (off + cols.view(-1, 1) * stride + rows.view(1, -1)).reshape(-1)

    def place_input(self, wkey: int, bkey: int, cols) -> None:
        """The input op's weight ``[len(cols), D]`` and bias; ``cols`` its outputs' state
        rows (relative to the op's first one). Its weight is input-major (a feature's
        weights are a contiguous row of ``input_width``)."""
        _start, npad, w, b = self._input
        cols = torch.as_tensor(cols, dtype=torch.long)
        feats = torch.arange(self.n_features)
        self.places[wkey] = (w + feats.view(1, -1) * npad + cols.view(-1, 1)).reshape(-1)
        self.places[bkey] = b + cols


def cols_of(regions: list[Region], start: int) -> list[int]:
    """State rows (relative to ``start``) of the regions' units, in order."""
    return [r.start - start + j for r in regions for j in range(r.n)]


def mlp_plan(plan: Plan, n_params_before: int, sizes: list[int]) -> None:
    """Plan of the ReLU MLP ``sizes = [D, h1, …, K]`` whose parameters are
    ``[W1, b1, W2, b2, …]`` starting at PyTorch parameter ``n_params_before``."""
    n = len(sizes) - 1
    (r,) = plan.input([sizes[1]], act="relu" if n > 1 else "id")
    plan.place_input(n_params_before, n_params_before + 1, cols_of([r], r.start))
    for i in range(1, n):
        out = plan.region(sizes[i + 1])
        w, stride, b = plan.dense(out, [r], "relu" if i < n - 1 else "id")
        k = n_params_before + 2 * i
        plan.place(k, w, stride, range(sizes[i]), range(sizes[i + 1]))
        plan.place(k + 1, b, 0, None, range(sizes[i + 1]))
        r = out
    plan.logits = r


# -- training ------------------------------------------------------------------------------

def _i64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(ctypes.c_void_p)


def csr(X: np.ndarray):
    """``X [N, D]`` as compressed sparse rows (row pointers, columns ascending, values):
    the kernel reads a row's few non-zeros from one or two cache lines."""
    rows, cols = np.nonzero(X)
    ptr = np.zeros(X.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=X.shape[0]), out=ptr[1:])
    return ptr, cols.astype(np.int32), np.ascontiguousarray(X[rows, cols], dtype=np.float32)


def train(model, params: list[torch.Tensor], data, cfg, order_seeds: list[int],
          progress=None, on_epoch=None,
          flags: tuple[str, ...] | None = None) -> list[torch.Tensor]:
    """Train ``params`` (leading dim E) of ``model`` on ``data`` with the kernel; the same
    contract, shuffles, mini-batches and ``on_epoch`` hook as
    :func:`nesybench.ski.ensemble.train`."""
    lib = library(flags)
    plan: Plan = model.plan()
    E = data.size
    P = _pad(plan.n_params)          # the kernel's Adam runs 16 parameters at a time
    B = cfg.batch_size
    flat = torch.zeros(E, P)
    for k, p in enumerate(params):
        flat[:, plan.places[k]] = p.detach().reshape(E, -1).float()
    flat = flat.numpy()
    m = np.zeros_like(flat)
    v = np.zeros_like(flat)
    steps = np.zeros(E, np.int64)
    X = data.X.numpy()
    y = _i64(data.y.numpy())
    N, D = X.shape[1], X.shape[2]
    xptr, xcol, xval = csr(X.reshape(-1, D))
    member = np.arange(E, dtype=np.int64)
    xbase = _i64(member * N if X.shape[0] > 1 else np.zeros(E))
    ybase = _i64(member * N if y.shape[0] > 1 else np.zeros(E))
    aux = model.aux(data.X) if hasattr(model, "aux") else None
    pen_w = 0.0
    abase = np.zeros(E, np.int64)
    if aux is not None:
        aux = np.ascontiguousarray(aux.numpy(), dtype=np.float32)
        if aux.shape[-1] != plan.logits.n:
            raise NesyError("aux truths must have one column per class")
        abase = _i64(member * N if aux.shape[0] > 1 else np.zeros(E))
        pen_w = float(model.penalty_weight())
    ops = np.ascontiguousarray(np.array(plan.ops, dtype=np.int32).reshape(-1))
    masks = np.ascontiguousarray(np.array(plan.masks or [0.0], dtype=np.float32))
    cidx = np.ascontiguousarray(np.array(plan.copy_idx or [-1], dtype=np.int32))
    gens = [torch.Generator().manual_seed(int(s) % (2**63)) for s in order_seeds]
    sizes = _i64([len(r) for r in data.rows])
    stride = max(int(sizes.max()) if E else 0, 1)
    for _epoch in range(cfg.epochs):
        idx = np.zeros((E, stride), np.int64)
        for e in range(E):
            k = len(data.rows[e])
            idx[e, :k] = data.rows[e][torch.randperm(k, generator=gens[e])].numpy()
        rc = lib.ski_train_epoch(
            E, P, _ptr(flat), _ptr(m), _ptr(v), _ptr(steps), _ptr(xptr), _ptr(xcol), _ptr(xval),
            _ptr(xbase),
            _ptr(y), _ptr(ybase), _ptr(aux) if aux is not None else None, _ptr(abase),
            _ptr(idx), stride, _ptr(sizes), B, _ptr(ops), len(plan.ops), _ptr(masks),
            _ptr(cidx), plan.width, plan.logits.start, plan.logits.n, plan.input_width,
            cfg.lr, cfg.betas[0], cfg.betas[1], cfg.eps, pen_w)
        if rc != 0:
            raise NesyError(f"the native SKI trainer failed (code {rc}: "
                            f"{'out of memory' if rc == -1 else 'more than 64 classes'})")
        if progress is not None:
            progress(1)
        if on_epoch is not None and on_epoch(_epoch, lambda: _unflatten(flat, plan, params)):
            break
    out = torch.from_numpy(flat)
    for k, p in enumerate(params):
        p.data = out[:, plan.places[k]].reshape(p.shape).clone()
    return params


def _unflatten(flat: np.ndarray, plan, params) -> list[torch.Tensor]:
    """Copies of the kernel's flat parameters in the shapes of ``params``."""
    out = torch.from_numpy(flat.copy())
    return [out[:, plan.places[k]].reshape(p.shape).clone() for k, p in enumerate(params)]


if __name__ == "__main__":      # `python -m nesybench.ski.native`: build (make setup does)
    import sys
    try:
        print(build(verbose=True))
    except NesyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
