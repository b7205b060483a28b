"""The inference methods of ``--inference``, read without importing PyTorch: ``exact``,
``sample:S`` (:mod:`nesybench.nesy.inference.approx`) and ``topk:K``
(:mod:`nesybench.nesy.inference.topk`)."""
from __future__ import annotations

from ...errors import NesyError

#: worlds sampled per example when ``sample`` names no number
DEFAULT_SAMPLES = 1000
#: proofs kept per node when ``topk`` names no number
DEFAULT_K = 10


def parse_inference(spec: str | None) -> tuple[str, int | None]:
    """``"exact"`` -> ``("exact", None)``; ``"sample:S"`` / ``"sample"`` -> ``("sample", S)``;
    ``"topk:K"`` / ``"topk"`` -> ``("topk", K)`` (the K best proofs,
    :mod:`nesybench.nesy.inference.topk`)."""
    spec = (spec or "exact").strip()
    if spec == "exact":
        return "exact", None
    kind, _, num = spec.partition(":")
    if kind == "sample":
        try:
            s = int(num) if num else DEFAULT_SAMPLES
        except ValueError:
            s = 0
        if s < 2:
            raise NesyError(f"--inference {spec}: the number of samples must be an integer >= 2",
                            field="inference")
        return "sample", s
    if kind == "topk":
        try:
            k = int(num) if num else DEFAULT_K
        except ValueError:
            k = 0
        if k < 1:
            raise NesyError(f"--inference {spec}: the number of proofs must be an integer >= 1",
                            field="inference")
        return "topk", k
    raise NesyError(f"unknown inference {spec!r}: exact | sample:S (S worlds sampled per "
                    "example) | topk:K (the K most probable proofs)", field="inference")
