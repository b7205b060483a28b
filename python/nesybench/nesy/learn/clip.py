"""Concepts from a foundation model: zero-shot CLIP concept probabilities.

``--concept-source clip:PATH_OR_NAME`` names a CLIP checkpoint in the Hugging Face format
(``config.json``, the weights, the tokenizer's ``vocab.json`` + ``merges.txt`` or
``tokenizer.json``; ``preprocessor_config.json`` optional): a local folder, or a model id
already in the user's Hugging Face cache. It is loaded with ``transformers`` (the ``clip``
extra) with ``local_files_only=True``: **nothing is downloaded at run time**; an absent
model is one error line that says what to download.

Zero-shot concepts (Radford et al. 2021): every concept variable reads one crop of the input
(``tiles``: its own 28 × 28 digit; ``figures``: its Kandinsky figure; ``whole``: the whole
image), resized to the vision tower's size (bicubic) and normalised with the checkpoint's
``image_mean``/``image_std`` (CLIP's defaults otherwise). Each value u of the variable has
prompts, the concept's ``prompts:`` in the task file (a template or a list of templates with
``{value}`` and optionally ``{concept}``) or by default ``"a photo of the {concept} {value}"``
(``{concept}``: the concept's ``map`` name, else its name, underscores as spaces). The text
embedding of a value is the normalised mean of its prompts' normalised embeddings (prompt
ensembling), and

    P(variable = u | crop) = softmax_u( exp(logit_scale) · cos(image embedding, text_u) ).

Image embeddings are cached on disk per data set content: the key hashes the images' bytes,
the checkpoint (its configuration and a strided sample of every weight tensor), the crops and
the preprocessing, under ``$NESYBENCH_CACHE/clip`` (default ``~/.cache/nesybench/clip``),
so a sweep computes them once. :data:`STATS` counts image-tower forward passes.

Used (a) as soft concept targets for the ``--concept-sup`` entries of dpl, fuzzy and cbm,
and (b) by the ``clip-logic`` model: CLIP's concept probabilities pushed through the task's
knowledge with the exact label semantics of DPL, no training.
"""
from __future__ import annotations

import hashlib
import json
import os
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ...errors import NesyError

PREFIX = "clip:"
DEFAULT_TEMPLATE = "a photo of the {concept} {value}"
OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)
PREPROCESS_VERSION = "clip-pre-1"
#: image-tower forward passes (batches) and images encoded in this process
STATS = {"batches": 0, "images": 0}

#: sane bounds of a CLIP configuration, checked before the model is built (field: lo, hi);
#: the largest published CLIPs (ViT-bigG/14: 48 layers, width 1664, 257 patches) fit
CONFIG_BOUNDS = {"num_hidden_layers": (1, 64), "hidden_size": (1, 8192),
                 "intermediate_size": (1, 32768), "num_attention_heads": (1, 128),
                 "vocab_size": (1, 1_000_000), "max_position_embeddings": (1, 4096),
                 "image_size": (1, 2048), "patch_size": (1, 2048), "projection_dim": (1, 8192),
                 "num_channels": (1, 4)}
#: the most memory the model's parameters may take (float32), estimated from the config
MAX_MODEL_BYTES = 8 << 30
#: the longest safetensors header (JSON) read
MAX_SAFETENSORS_HEADER = 100 << 20


def _int_field(cfg: dict, key: str, where: str, file: str) -> int | None:
    if key not in cfg or cfg[key] is None:
        return None
    v = cfg[key]
    lo, hi = CONFIG_BOUNDS[key]
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise NesyError(f"must be an integer from {lo} to {hi:,}, got {str(v)[:30]}",
                        file=file, field=f"{where}{key}")
    return v


def check_config(cfg: dict, file: str = "config.json") -> int:
    """Check a CLIP ``config.json`` (already parsed) before any model is built: every size
    an integer within :data:`CONFIG_BOUNDS`, heads dividing the width, patches dividing the
    image, and the parameters' memory (estimated, float32) at most :data:`MAX_MODEL_BYTES`.
    Returns the estimate in bytes; one :class:`NesyError` naming the field otherwise."""
    if not isinstance(cfg, dict):
        raise NesyError("not a JSON object", file=file)
    total = 0
    defaults = {"text_config": {"vocab_size": 49408, "hidden_size": 512,
                                "intermediate_size": 2048, "num_hidden_layers": 12,
                                "num_attention_heads": 8, "max_position_embeddings": 77},
                "vision_config": {"hidden_size": 768, "intermediate_size": 3072,
                                  "num_hidden_layers": 12, "num_attention_heads": 12,
                                  "image_size": 224, "patch_size": 32, "num_channels": 3}}
    _int_field(cfg, "projection_dim", "", file)
    proj = cfg.get("projection_dim") or 512
    for tower, dflt in defaults.items():
        sub = cfg.get(tower) or {}
        if not isinstance(sub, dict):
            raise NesyError("must be an object", file=file, field=tower)
        where = f"{tower}."
        vals = {}
        for key in (*dflt, "projection_dim"):
            v = _int_field(sub, key, where, file)
            vals[key] = dflt.get(key, proj) if v is None else v
        h, heads = vals["hidden_size"], vals["num_attention_heads"]
        if h % heads:
            raise NesyError(f"hidden_size {h} is not a multiple of num_attention_heads {heads}",
                            file=file, field=f"{where}hidden_size")
        layer = 4 * h * h + 2 * h * vals["intermediate_size"] + 9 * h
        params = vals["num_hidden_layers"] * layer + h * proj
        if tower == "text_config":
            params += (vals["vocab_size"] + vals["max_position_embeddings"]) * h
        else:
            size, patch = vals["image_size"], vals["patch_size"]
            if patch > size:
                raise NesyError(f"patch_size {patch} is larger than image_size {size}",
                                file=file, field=f"{where}patch_size")
            params += ((size // patch) ** 2 + 1) * h + vals["num_channels"] * patch * patch * h
        total += 4 * params
    if total > MAX_MODEL_BYTES:
        raise NesyError(f"the configuration describes a model of about {total / 2**30:.1f} GiB "
                        f"of parameters, over the limit of {MAX_MODEL_BYTES / 2**30:.0f} GiB",
                        file=file)
    return total


def check_safetensors(folder, rel: str) -> None:
    """Check the ``.safetensors`` file ``rel`` of ``folder`` (a
    :class:`~nesybench.folder.DataFolder`): its header (its length, JSON with each key once,
    and every tensor's byte range inside the file), read through the contained reader before
    the library reads the file; one :class:`NesyError` otherwise."""
    from ...folder import parse_json  # noqa: PLC0415

    label = folder.label(rel)
    head, size = folder.read_head(rel, 8)
    n = int.from_bytes(head, "little") if len(head) == 8 else -1
    if n < 2 or n > MAX_SAFETENSORS_HEADER or n > size - 8:
        raise NesyError("not a safetensors file (its header length is "
                        f"{'missing' if n < 0 else f'{n:,} bytes'}, the file has "
                        f"{size:,})", file=label)
    raw = folder.read_head(rel, 8 + n)[0][8:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NesyError("not a safetensors file (its header is not UTF-8 JSON)",
                        file=label) from None
    try:
        header = parse_json(text, label)
    except NesyError as exc:
        raise NesyError(f"not a safetensors file (its header: {exc.message})",
                        file=label) from None
    if not isinstance(header, dict):
        raise NesyError("not a safetensors file (its header is not a JSON object)", file=label)
    data = size - 8 - n
    for name, t in header.items():
        if name == "__metadata__":
            continue
        offs = t.get("data_offsets") if isinstance(t, dict) else None
        if not (isinstance(offs, list) and len(offs) == 2
                and all(isinstance(o, int) and not isinstance(o, bool) for o in offs)
                and 0 <= offs[0] <= offs[1] <= data):
            raise NesyError(f"safetensors tensor {str(name)[:60]!r}: data offsets outside the "
                            "file", file=label)


def check_preprocessor(text: str, label: str) -> dict:
    """``image_mean``/``image_std`` of the text of a ``preprocessor_config.json`` (named
    ``label``): JSON with each key once, three finite numbers each, every std > 0 (a NaN or
    zero would make every embedding NaN or infinite)."""
    from ...folder import parse_json  # noqa: PLC0415

    path = label
    js = parse_json(text, label, constants=True)    # NaN is refused below, by its field
    if not isinstance(js, dict):
        raise NesyError("not a JSON object", file=str(path))
    out = {}
    for k in ("image_mean", "image_std"):
        v = js.get(k)
        if v is None:
            continue
        if not (isinstance(v, list) and len(v) == 3 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)):
            raise NesyError("must be a list of three numbers (one per colour channel)",
                            file=str(path), field=k)
        for i, x in enumerate(v):
            if not np.isfinite(float(x)) or (k == "image_std" and not 0 < float(x) <= 1e6) \
                    or abs(float(x)) > 1e6:
                raise NesyError(f"{x!r} is not a usable value (finite"
                                f"{', > 0' if k == 'image_std' else ''})", file=str(path),
                                field=f"{k}[{i}]")
        out[k] = tuple(float(x) for x in v)
    return out


def cache_dir() -> Path:
    """The embedding cache: ``clip/`` in the user cache (:func:`nesybench.paths.cache_root`)."""
    from ...paths import cache_root  # noqa: PLC0415
    return cache_root() / "clip"


#: the largest cached embedding file read back
MAX_EMBEDDINGS_BYTES = 4 << 30


def read_cached_embeddings(name: str) -> np.ndarray | None:
    """The array of the embedding cache's file ``name`` (``<key>.npy``), read through the
    contained reader (a regular file inside the cache, bounded; ``.npy`` without pickles), or
    None when it is missing or damaged (it is then computed and written again)."""
    import io  # noqa: PLC0415

    from ...folder import read_cache_entry  # noqa: PLC0415
    entry = read_cache_entry(cache_dir(), name, max_bytes=MAX_EMBEDDINGS_BYTES)
    if entry is None:
        return None
    try:
        return np.lib.format.read_array(io.BytesIO(entry[0]), allow_pickle=False)
    except (ValueError, EOFError):
        return None                                      # a damaged entry: recompute it


def parse_source(source: str) -> str:
    """``clip:PATH_OR_NAME`` -> ``PATH_OR_NAME`` (one-line error otherwise)."""
    if not isinstance(source, str) or not source.startswith(PREFIX) or not source[len(PREFIX):]:
        raise NesyError(f"--concept-source takes clip:PATH_OR_NAME, not {source!r}",
                        field="concept_source")
    return source[len(PREFIX):]


@contextmanager
def _offline():
    old = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def load_clip(name: str, device: str = "cpu"):
    """``(model, tokenizer, preprocessing dict)`` of a local CLIP checkpoint (module
    docstring); never downloads."""
    try:
        import transformers  # noqa: PLC0415
        from transformers.utils import logging as hf_logging  # noqa: PLC0415
    except ImportError:
        raise NesyError("CLIP concepts need the `transformers` package: install the clip extra, "
                        "pip install 'nesybench[clip]'", field="concept_source") from None
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    path = Path(name).expanduser()
    looks_like_path = path.is_absolute() or name.startswith((".", "~")) or path.exists() \
        or name.count("/") > 1
    if looks_like_path and not path.is_dir():
        raise NesyError("CLIP checkpoint folder not found", file=str(path),
                        field="concept_source")
    ref = str(path) if path.is_dir() else name
    if path.is_dir():
        # the configuration, the weights' header and the normalisation are checked before
        # anything is built: a hostile config.json would allocate without bound
        from ...folder import DataFolder  # noqa: PLC0415

        folder = DataFolder(path)
        if folder.exists("config.json"):
            check_config(folder.read_json("config.json", max_bytes=16 << 20),
                         folder.label("config.json"))
        for rel in folder.files():
            if rel.endswith(".safetensors"):
                check_safetensors(folder, rel)
    try:
        with _offline():
            # safetensors only: a pickled weights file from someone else could run code
            model = transformers.CLIPModel.from_pretrained(ref, local_files_only=True,
                                                           use_safetensors=True,
                                                           trust_remote_code=False)
            tok = transformers.CLIPTokenizer.from_pretrained(ref, local_files_only=True,
                                                             trust_remote_code=False)
    except Exception as exc:  # noqa: BLE001 - transformers and safetensors raise many kinds
        if not isinstance(exc, (OSError, ValueError, RuntimeError, TypeError, KeyError)) and \
                type(exc).__name__ != "SafetensorError":
            raise
        if path.is_dir():
            msg = " ".join(str(exc).split())[:200]
            raise NesyError(f"not a readable CLIP checkpoint (config.json, model.safetensors "
                            f"and tokenizer files in the Hugging Face format; pickled weights "
                            f"are not loaded): {msg}", file=str(path),
                            field="concept_source") from None
        raise NesyError(f"CLIP model {name!r} is not in the local Hugging Face cache and "
                        f"nesybench downloads nothing at run time: fetch it once with "
                        f"`huggingface-cli download {name}` (or save it to a folder and pass "
                        f"clip:FOLDER)", field="concept_source") from None
    pre = {"image_mean": OPENAI_MEAN, "image_std": OPENAI_STD}
    pc = (path if path.is_dir() else Path(getattr(model, "name_or_path", "") or ".")) \
        / "preprocessor_config.json"
    if not path.is_dir():
        try:
            from huggingface_hub import try_to_load_from_cache  # noqa: PLC0415
            hit = try_to_load_from_cache(name, "preprocessor_config.json")
            pc = Path(hit) if isinstance(hit, str) else pc
        except Exception:  # noqa: BLE001 - optional: CLIP's defaults then
            pass
    if path.is_dir():
        from ...folder import DataFolder  # noqa: PLC0415
        folder = DataFolder(path)
        if folder.exists("preprocessor_config.json"):
            pre.update(check_preprocessor(
                folder.read_text("preprocessor_config.json", max_bytes=1 << 20),
                folder.label("preprocessor_config.json")))
    elif pc.is_file():      # in the Hugging Face cache: one input file
        from ...folder import read_input_text  # noqa: PLC0415
        pre.update(check_preprocessor(read_input_text(pc, max_bytes=1 << 20), str(pc)))
    model.to(torch.device(device)).eval()
    return model, tok, pre


def _features(out) -> Tensor:
    """transformers 4 returns the projected embeddings, 5 a model output holding them."""
    return out if isinstance(out, Tensor) else out.pooler_output


def prompts_of(task) -> list[list[list[str]]]:
    """Per variable, per value, the prompts (module docstring); templates checked."""
    raw = {}
    for c in (task.raw or {}).get("concepts", []) or []:
        if isinstance(c, dict) and "prompts" in c:
            raw[str(c.get("name"))] = c["prompts"]
    out = []
    for v in task.variables:
        base = v.name.split("(")[0]
        tmpl = raw.get(base, DEFAULT_TEMPLATE)
        tmpls = [tmpl] if isinstance(tmpl, str) else list(tmpl)
        if not tmpls or not all(isinstance(t, str) and "{value}" in t for t in tmpls):
            raise NesyError("prompts must be a template or a list of templates, each with "
                            "{value}", task=task.name, field=f"concepts.{base}.prompts")
        concept = v.concept.replace("_", " ")
        out.append([[t.replace("{concept}", concept).replace("{value}", str(u).replace("_", " "))
                     for t in tmpls] for u in v.domain])
    return out


def crops_of(task, render: str | None, input_shape: tuple[int, ...]):
    """``(layout, n_crops, var -> crop index)`` for a data set's images."""
    from .nets import layout_of  # noqa: PLC0415
    layout = layout_of(render, input_shape)
    n = len(task.variables)
    if layout == "vector":
        raise NesyError("CLIP concepts need images; this data set has vector inputs",
                        field="concept_source")
    if layout == "tiles":
        return layout, n, list(range(n))
    if layout == "figures":
        figs = []
        for v in task.variables:
            f = v.term[1]
            if f not in figs:
                figs.append(f)
        return layout, len(figs), [figs.index(v.term[1]) for v in task.variables]
    return layout, 1, [0] * n


class ClipConcepts:
    """Zero-shot concept probabilities of a CLIP checkpoint for one task (module docstring)."""

    def __init__(self, source: str, task, *, device: str = "cpu", batch: int = 64):
        self.source = source
        self.name = parse_source(source)
        self.task = task
        self.device = torch.device(device)
        self.batch = batch
        self.prompts = prompts_of(task)
        self.model, self.tokenizer, self.pre = load_clip(self.name, device)
        vc = self.model.config.vision_config
        self.image_size = int(vc.image_size)
        self._text: list[Tensor] | None = None
        self.fingerprint = self._fingerprint()

    # -- identity of the checkpoint (cache keys) -----------------------------------------
    def _fingerprint(self) -> str:
        h = hashlib.sha256()
        h.update(json.dumps(self.model.config.to_dict(), sort_keys=True, default=str).encode())
        for name, t in sorted(self.model.state_dict().items()):
            flat = t.detach().flatten()
            step = max(1, flat.numel() // 4096)
            h.update(name.encode())
            h.update(flat[::step].to(torch.float32).cpu().numpy().tobytes())
        return h.hexdigest()[:24]

    # -- text side ------------------------------------------------------------------------
    @torch.no_grad()
    def text_embeddings(self) -> list[Tensor]:
        """Per variable, (k, D) unit text embeddings of its values."""
        if self._text is None:
            memo: dict[str, Tensor] = {}
            out = []
            max_len = int(self.model.config.text_config.max_position_embeddings)
            for per_value in self.prompts:
                rows = []
                for ps in per_value:
                    key = "\x00".join(ps)
                    if key not in memo:
                        enc = self.tokenizer(ps, padding=True, truncation=True,
                                             max_length=max_len, return_tensors="pt")
                        enc = {k: v.to(self.device) for k, v in enc.items()}
                        e = F.normalize(_features(self.model.get_text_features(**enc)), dim=-1)
                        memo[key] = F.normalize(e.mean(0), dim=-1)
                    rows.append(memo[key])
                out.append(torch.stack(rows))
            self._text = out
        return self._text

    # -- image side -----------------------------------------------------------------------
    def preprocess(self, crops: Tensor) -> Tensor:
        """(B, C, h, w) in [0, 1] -> (B, 3, S, S) normalised pixel values."""
        x = crops.float()
        if x.shape[1] == 1:
            x = x.expand(-1, 3, -1, -1)
        elif x.shape[1] == 4:
            x = x[:, :3]
        x = F.interpolate(x, size=(self.image_size, self.image_size), mode="bicubic",
                          align_corners=False, antialias=True).clamp(0, 1)
        mean = torch.tensor(self.pre["image_mean"], dtype=x.dtype).view(1, 3, 1, 1)
        std = torch.tensor(self.pre["image_std"], dtype=x.dtype).view(1, 3, 1, 1)
        return (x - mean) / std

    @torch.no_grad()
    def _encode(self, crops: Tensor) -> Tensor:
        out = []
        for s in range(0, len(crops), self.batch):
            px = self.preprocess(crops[s:s + self.batch]).to(self.device)
            STATS["batches"] += 1
            STATS["images"] += len(px)
            out.append(F.normalize(_features(self.model.get_image_features(pixel_values=px)),
                                   dim=-1).cpu())
        return torch.cat(out)

    def _crops(self, x: Tensor, layout: str, n_crops: int) -> Tensor:
        """(N, C, H, W) -> (N * n_crops, C, h, w), example-major."""
        if layout == "whole":
            return x
        w = 28 if layout == "tiles" else x.shape[2]
        parts = x.unfold(3, w, w).permute(0, 3, 1, 2, 4)          # (N, n, C, H, w)
        if parts.shape[1] != n_crops:
            raise NesyError(f"images hold {parts.shape[1]} crops, the task {n_crops}",
                            field="concept_source")
        return parts.reshape(-1, *parts.shape[2:])

    def image_embeddings(self, x: Tensor, render: str | None) -> tuple[Tensor, list[int]]:
        """``((N, n_crops, D) unit embeddings, var -> crop)``, from the cache when there."""
        layout, n_crops, var_crop = crops_of(self.task, render, tuple(x.shape[1:]))
        xc = x.detach().cpu().contiguous()
        h = hashlib.sha256()
        h.update(json.dumps([PREPROCESS_VERSION, self.fingerprint, layout, n_crops,
                             self.image_size, list(self.pre["image_mean"]),
                             list(self.pre["image_std"]), list(xc.shape), str(xc.dtype)]).encode())
        h.update(xc.numpy().tobytes())
        path = cache_dir() / f"{h.hexdigest()[:32]}.npy"
        arr = read_cached_embeddings(path.name)
        if arr is not None and arr.ndim == 3 and arr.shape[:2] == (len(xc), n_crops):
            return torch.from_numpy(arr), var_crop
        emb = self._encode(self._crops(xc, layout, n_crops)).reshape(len(xc), n_crops, -1)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.npy")
        np.save(tmp, emb.numpy())
        tmp.replace(path)
        return emb, var_crop

    @torch.no_grad()
    def probs(self, x: Tensor, render: str | None) -> list[Tensor]:
        """Per variable, (N, k) zero-shot concept probabilities of the images ``x``."""
        emb, var_crop = self.image_embeddings(x, render)
        text = self.text_embeddings()
        scale = float(self.model.logit_scale.exp())
        return [torch.softmax(scale * emb[:, c].float() @ t.cpu().float().T, dim=1)
                for c, t in zip(var_crop, text)]

    def concept_probs(self, data) -> list[Tensor]:
        """:meth:`probs` of a :class:`~nesybench.nesy.learn.data.NesyData` split."""
        return self.probs(data.x, data.render)


def row_key(row: Tensor) -> bytes:
    """Content key of one image (the clip-logic model's memo)."""
    return hashlib.sha1(row.detach().cpu().contiguous().numpy().tobytes()).digest()


def write_tiny_clip(folder, *, seed: int = 0, dim: int = 16, image_size: int = 32) -> Path:
    """Write a tiny CLIP with random weights (one transformer layer per tower, a character
    tokenizer) in the Hugging Face format to ``folder``: a checkpoint for tests and for
    trying the pipeline offline. Its concepts are chance-level, not CLIP's."""
    try:
        import transformers  # noqa: PLC0415
        from transformers.utils import logging as hf_logging  # noqa: PLC0415
    except ImportError:
        raise NesyError("writing a CLIP checkpoint needs the `transformers` package: install "
                        "the clip extra, pip install 'nesybench[clip]'") from None
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for ch in "abcdefghijklmnopqrstuvwxyz0123456789":
        vocab[ch] = len(vocab)
        vocab[ch + "</w>"] = len(vocab)
    (out / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (out / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    common = {"hidden_size": dim, "intermediate_size": 2 * dim, "num_hidden_layers": 1,
              "num_attention_heads": 2, "projection_dim": dim}
    text = transformers.CLIPTextConfig(vocab_size=len(vocab), max_position_embeddings=64,
                                       bos_token_id=0, eos_token_id=1, pad_token_id=1, **common)
    vision = transformers.CLIPVisionConfig(image_size=image_size, patch_size=image_size // 4,
                                           **common)
    cfg = transformers.CLIPConfig(text_config=text.to_dict(), vision_config=vision.to_dict(),
                                  projection_dim=dim)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.CLIPModel(cfg)
    model.save_pretrained(out)
    tok = transformers.CLIPTokenizer(str(out / "vocab.json"), str(out / "merges.txt"))
    tok.save_pretrained(out)
    return out
