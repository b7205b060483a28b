"""Concepts from CLIP (`--concept-source clip:...`, the clip-logic model) with a tiny CLIP of
random weights built from a config and a character tokenizer written here: no network, no
download. Shapes, the zero-shot formula by hand, determinism, the embedding cache, the
supervision path end to end, the sweep cell, and the one-line errors."""
from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("transformers")

from nesybench.cli import main  # noqa: E402
from nesybench.errors import NesyError  # noqa: E402
from nesybench.nesy.learn import clip as nclip  # noqa: E402
from nesybench.nesy.learn.data import NesyData  # noqa: E402
from nesybench.shortcuts.task import load_task  # noqa: E402


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "cache"))   # a fresh cache per test
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """A CLIP in the Hugging Face format: CLIPConfig with tiny towers, random weights,
    save_pretrained, and a CLIPTokenizer from a vocab/merges written here."""
    import transformers
    out = tmp_path_factory.mktemp("tinyclip")
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for ch in "abcdefghijklmnopqrstuvwxyz0123456789":
        vocab[ch] = len(vocab)
        vocab[ch + "</w>"] = len(vocab)
    (out / "vocab.json").write_text(json.dumps(vocab))
    (out / "merges.txt").write_text("#version: 0.2\n")
    common = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                  num_attention_heads=2, projection_dim=8)
    cfg = transformers.CLIPConfig(
        text_config=transformers.CLIPTextConfig(vocab_size=len(vocab), max_position_embeddings=64,
                                                bos_token_id=0, eos_token_id=1, pad_token_id=1,
                                                **common).to_dict(),
        vision_config=transformers.CLIPVisionConfig(image_size=32, patch_size=8,
                                                    **common).to_dict(),
        projection_dim=8)
    torch.manual_seed(0)
    transformers.CLIPModel(cfg).save_pretrained(out)
    transformers.CLIPTokenizer(str(out / "vocab.json"), str(out / "merges.txt")).save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def data(root, tmp_path_factory):
    from nesybench.shortcuts.generate import generate
    out = tmp_path_factory.mktemp("clipdata") / "xor"
    generate(load_task(root / "curricula/rs/xor.yaml"), out, seed=0,
             samples={"train": 16, "val": 8, "test": 8, "ood": 0})
    return out


def test_zero_shot_probabilities_by_hand(root, ckpt, data):
    task = load_task(root / "curricula/rs/xor.yaml")
    ds = NesyData.from_folder(data, "test", task, [[0, 1]])
    cc = nclip.ClipConcepts(f"clip:{ckpt}", task)
    assert cc.prompts[0] == [["a photo of the b 0"], ["a photo of the b 1"]]
    probs = cc.concept_probs(ds)
    assert [tuple(p.shape) for p in probs] == [(8, 2)] * 3
    assert torch.allclose(sum(p.sum(1) for p in probs) / 3, torch.ones(8))
    # by hand: variable 2 reads the third 28 x 28 tile
    m = cc.model
    with torch.no_grad():
        px = cc.preprocess(ds.x[:, :, :, 56:84])
        assert tuple(px.shape) == (8, 3, 32, 32)
        img = F.normalize(nclip._features(m.get_image_features(pixel_values=px)), dim=-1)
        tok = cc.tokenizer(["a photo of the b 0", "a photo of the b 1"], padding=True,
                           return_tensors="pt")
        txt = F.normalize(nclip._features(m.get_text_features(**tok)), dim=-1)
        want = torch.softmax(m.logit_scale.exp() * img @ txt.T, dim=1)
    assert torch.allclose(probs[2], want, atol=1e-5)
    # deterministic: a second load gives the same numbers (and the same cache key)
    again = nclip.ClipConcepts(f"clip:{ckpt}", task)
    assert again.fingerprint == cc.fingerprint
    assert all(torch.equal(a, b) for a, b in zip(probs, again.concept_probs(ds)))


def test_prompts_from_the_task_file(root, ckpt):
    raw = {"name": "p", "knowledge": str(root / "kb/shortcuts/xor.lp"),
           "concepts": [{"name": "b", "count": 2, "domain": [0, 1],
                         "prompts": ["a photo of the digit {value}", "a {value}"]}]}
    cc = nclip.ClipConcepts(f"clip:{ckpt}", load_task(raw))
    assert cc.prompts[1] == [["a photo of the digit 0", "a 0"], ["a photo of the digit 1", "a 1"]]
    assert [tuple(t.shape) for t in cc.text_embeddings()] == [(2, 8), (2, 8)]
    bad = dict(raw, concepts=[{"name": "b", "count": 2, "domain": [0, 1], "prompts": "no slot"}])
    with pytest.raises(NesyError, match="prompts"):
        load_task(bad)


def test_embeddings_are_cached_per_data_set(root, ckpt, data):
    task = load_task(root / "curricula/rs/xor.yaml")
    ds = NesyData.from_folder(data, "train", task, [[0, 1]])
    before = dict(nclip.STATS)
    first = nclip.ClipConcepts(f"clip:{ckpt}", task).concept_probs(ds)
    assert nclip.STATS["images"] - before["images"] == 16 * 3          # 3 tiles per image
    mid = dict(nclip.STATS)
    second = nclip.ClipConcepts(f"clip:{ckpt}", task).concept_probs(ds)
    assert nclip.STATS == mid                                         # read from the cache
    assert all(torch.equal(a, b) for a, b in zip(first, second))
    ds.x[0, 0, 0, 0] += 0.5                                           # other content: recompute
    nclip.ClipConcepts(f"clip:{ckpt}", task).concept_probs(ds)
    assert nclip.STATS["images"] - mid["images"] == 16 * 3


def test_supervision_end_to_end(root, ckpt, data, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["nesy", "train", str(root / "curricula/rs/xor.yaml"), "--model", "cbm",
                 "--data", str(data), "--epochs", "1", "--batch", "8", "--threads", "1",
                 "--concept-sup", "0.5", "--concept-source", f"clip:{ckpt}", "--out", str(run),
                 "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["supervised_entries"] == 8 * 3
    assert s["config"]["concept_source"] == f"clip:{ckpt}"
    assert 0 <= s["concept_source"]["train_concept_accuracy"] <= 1
    # the targets are CLIP's probabilities: the soft cross-entropy of the models
    from nesybench.nesy.learn.models import CBM
    task = load_task(root / "curricula/rs/xor.yaml")
    m = CBM(task.variables, [[0, 1]], "vector", (4,))
    logits = [torch.tensor([[0.3, -0.2]]), torch.tensor([[1.0, 0.0]]), torch.tensor([[0., 2.]])]
    q = [torch.tensor([[0.25, 0.75]])] * 3
    total, parts = m._add_concept_loss(torch.tensor(0.0), {}, logits, q,
                                       torch.ones(1, 3, dtype=torch.bool))
    want = sum(-(qq * torch.log_softmax(z, 1)).sum() for qq, z in zip(q, logits)) / 3
    assert float(total) == pytest.approx(float(want))


def test_clip_logic_is_clip_concepts_through_the_knowledge(root, ckpt, data, tmp_path, capsys):
    from nesybench.nesy.inference.semantics import WorldEnumeration
    run = tmp_path / "cl"
    assert main(["nesy", "train", str(root / "curricula/rs/xor.yaml"), "--model", "clip-logic",
                 "--data", str(data), "--concept-source", f"clip:{ckpt}", "--out", str(run),
                 "--threads", "1", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    task = load_task(root / "curricula/rs/xor.yaml")
    ds = NesyData.from_folder(data, "test", task, [[0, 1]])
    probs = nclip.ClipConcepts(f"clip:{ckpt}", task).concept_probs(ds)
    marg = WorldEnumeration(task).label_marginals(probs)[0]
    want_acc = float((marg.argmax(1) == ds.labels[:, 0]).float().mean())
    assert s["results"]["test"]["metrics"]["label_accuracy"] == pytest.approx(want_acc)
    con = torch.stack([p.argmax(1) for p in probs], 1)
    assert s["results"]["test"]["metrics"]["concept_accuracy"] == pytest.approx(
        float((con == ds.concepts).float().mean()))
    assert main(["nesy", "eval", str(run), "--data", str(data), "--split", "test",
                 "--json"]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["results"]["test"]["metrics"] == s["results"]["test"]["metrics"]


def test_sweep_cell_with_a_concept_source(root, ckpt, data, tmp_path):
    from nesybench.nesy.learn.cells import nesy_train_cell
    from nesybench.runs import CellContext
    params = {"task": "curricula/rs/xor.yaml", "data": str(data), "epochs": 1, "batch": 8,
              "concept_sup": 1.0, "concept_source": f"clip:{ckpt}"}
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
    out = nesy_train_cell({**params, "model": "dpl"}, 0,
                          CellContext("a", {}, 0, tmp_path / "a"))
    assert "test_concept_accuracy" in out
    mid = dict(nclip.STATS)
    out = nesy_train_cell({**params, "model": "cbm"}, 1, CellContext("b", {}, 1, tmp_path / "b"))
    assert "test_concept_accuracy" in out
    assert nclip.STATS == mid          # the second cell reads the training embeddings cached


@pytest.mark.parametrize("source, model, message", [
    ("clip:no-such/model", "cbm", "huggingface-cli download no-such/model"),
    ("clip:/no/such/folder", "cbm", "CLIP checkpoint folder not found"),
    ("openai", "cbm", "clip:PATH_OR_NAME"),
    (None, "clip-logic", "needs --concept-source"),
    ("clip:x", "nn", "nn model has none"),
])
def test_bad_sources_exit_2(root, data, tmp_path, capsys, source, model, message):
    out = tmp_path / "r"
    args = ["nesy", "train", str(root / "curricula/rs/xor.yaml"), "--model", model, "--data",
            str(data), "--epochs", "1", "--out", str(out), "-q"]
    if source:
        args += ["--concept-source", source]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not out.exists()


def test_a_folder_that_is_not_a_checkpoint(root, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(NesyError, match="not a readable CLIP checkpoint"):
        nclip.ClipConcepts(f"clip:{tmp_path / 'empty'}", load_task(root / "curricula/rs/xor.yaml"))


def test_pickled_weights_are_not_loaded(tmp_path):
    """Only safetensors: a checkpoint whose weights are a pickle (which could run code when
    unpickled) is refused with one error, and the pickle is never opened."""
    import shutil

    from nesybench.errors import NesyError
    from nesybench.nesy.learn import clip

    src = tmp_path / "tiny"
    clip.write_tiny_clip(src)
    bad = tmp_path / "pickled"
    shutil.copytree(src, bad)
    for f in bad.glob("*.safetensors"):
        f.unlink()
    marker = tmp_path / "opened"
    (bad / "pytorch_model.bin").write_bytes(
        b"\x80\x04\x95" + b"cos\nsystem\n" + f"(V touch {marker}\ntR.".encode())
    with pytest.raises(NesyError, match="safetensors"):
        clip.load_clip(str(bad))
    assert not marker.exists()


# ------------------------------------------------------------------ hostile checkpoints
def _hostile(ckpt, tmp_path, edit=None, weights=None, pre=None):
    import shutil
    bad = tmp_path / "bad"
    shutil.copytree(ckpt, bad)
    if edit:
        cfg = json.loads((bad / "config.json").read_text())
        edit(cfg)
        (bad / "config.json").write_text(json.dumps(cfg))
    if weights is not None:
        (bad / "model.safetensors").write_bytes(weights)
    if pre is not None:
        (bad / "preprocessor_config.json").write_text(pre)
    return bad


HOSTILE_CONFIGS = {
    "vocab 1e12": (lambda c: c["text_config"].__setitem__("vocab_size", 10**12),
                   "text_config.vocab_size"),
    "vocab float": (lambda c: c["text_config"].__setitem__("vocab_size", 1e12),
                    "text_config.vocab_size"),
    "image size -5": (lambda c: c["vision_config"].__setitem__("image_size", -5),
                      "vision_config.image_size"),
    "image size 100000": (lambda c: c["vision_config"].__setitem__("image_size", 100000),
                          "vision_config.image_size"),
    "layers 10**7": (lambda c: c["vision_config"].__setitem__("num_hidden_layers", 10**7),
                     "vision_config.num_hidden_layers"),
    "too big in all": (lambda c: c["text_config"].update(hidden_size=8192, num_hidden_layers=64,
                                                         intermediate_size=32768,
                                                         num_attention_heads=64), "GiB"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_CONFIGS))
def test_a_hostile_config_is_one_error_before_the_model_is_built(root, ckpt, tmp_path, case):
    import time
    edit, field = HOSTILE_CONFIGS[case]
    bad = _hostile(ckpt, tmp_path, edit=edit)
    t0 = time.monotonic()
    with pytest.raises(NesyError, match=field.replace(".", r"\.")):
        nclip.load_clip(str(bad))
    assert time.monotonic() - t0 < 10


def test_broken_safetensors_and_bad_normalisation_are_one_error(root, ckpt, tmp_path):
    bad = _hostile(ckpt, tmp_path, weights=b"\xff" * 64)
    with pytest.raises(NesyError, match="not a safetensors file"):
        nclip.load_clip(str(bad))
    for pre, field in (('{"image_mean": [0.5, 0.5, 0.5], "image_std": [NaN, 0.2, 0.2]}',
                        "image_std"),
                       ('{"image_mean": [0.5, 0.5, 0.5], "image_std": [0, 0.2, 0.2]}',
                        "image_std"),
                       ('{"image_mean": [0.5, Infinity, 0.5]}', "image_mean")):
        bad = _hostile(ckpt, tmp_path / field / str(len(pre)), pre=pre)
        with pytest.raises(NesyError, match=field):
            nclip.load_clip(str(bad))
    assert nclip.check_config(json.loads((ckpt / "config.json").read_text())) > 0
