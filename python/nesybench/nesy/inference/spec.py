"""The inference methods of ``--inference``, read without importing PyTorch: ``exact``,
``sample:S`` (:mod:`nesybench.nesy.inference.approx`) and ``topk:K``
(:mod:`nesybench.nesy.inference.topk`)."""
from __future__ import annotations

from ...errors import NesyError

#: worlds sampled per example when ``sample`` names no number
DEFAULT_SAMPLES = 1000
#: proofs kept per node when ``topk`` names no number
DEFAULT_K = 10


#: method -> (default count, least count, what the count counts)
_COUNTS = {"sample": (DEFAULT_SAMPLES, 2, "samples"), "topk": (DEFAULT_K, 1, "proofs")}


def parse_inference(spec: str | None) -> tuple[str, int | None]:
    """``"exact"`` -> ``("exact", None)``; ``"sample:S"`` / ``"sample"`` -> ``("sample", S)``;
    ``"topk:K"`` / ``"topk"`` -> ``("topk", K)`` (the K best proofs,
    :mod:`nesybench.nesy.inference.topk`)."""
    spec = (spec or "exact").strip()
    if spec == "exact":
        return "exact", None
    kind, _, num = spec.partition(":")
    if kind not in _COUNTS:
        raise NesyError(f"unknown inference {spec!r}: exact | sample:S (S worlds sampled per "
                        "example) | topk:K (the K most probable proofs)", field="inference")
    default, least, what = _COUNTS[kind]
    try:
        n = int(num) if num else default
    except ValueError:
        n = 0
    if n < least:
        raise NesyError(f"--inference {spec}: the number of {what} must be an integer "
                        f">= {least}", field="inference")
    return kind, n
