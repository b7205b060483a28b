"""PSyKI side of ``benchmarks/ski_psyki.py``: run with the Python of a separate environment
that has ``psyki`` (and its TensorFlow; ``scripts/psyki_env.sh`` builds one); never imported
by nesybench.

Reads ``job.npz`` (the clean feature matrix, labels, the test rows, and per member its
training rows and labels), builds Towell's splice domain theory in PSyKI's Prolog syntax,
trains PSyKI's KBANN (Towell fuzzifier) and a Keras MLP of the same hidden widths as
nesybench's uneducated predictor on every member, and writes the test accuracies to
``acc.npz``.

    PSYKI_PYTHON benchmarks/ski_psyki_worker.py JOB_DIR
    PSYKI_PYTHON benchmarks/ski_psyki_worker.py --outputs JOB_DIR   # untrained network
    PSYKI_PYTHON benchmarks/ski_psyki_worker.py --theory            # print the theory
    PSYKI_PYTHON benchmarks/ski_psyki_worker.py --mofn-demo         # PSyKI's m_of_n

``--outputs`` builds the network from the theory alone (ω from ``job.json``) and writes its
class outputs on every row of ``X`` to ``outputs.npy``, without training.

How the theory is written for PSyKI's Towell fuzzifier (each choice matters to the network
it builds):

* a base is the variable of its multi-hot column (``X_3a``), a positive antecedent of
  weight ω; an IUPAC code of several bases is their disjunction, ``(X_3a ; X_3c)``, a unit
  with bias ω/2. Written as ``\\+ (X_3a = 0, X_3c = 0)`` it has the same crisp meaning, but
  PSyKI gives a negated antecedent weight −ω and its m-of-n unit the bias m − ω/2 whatever
  the signs, so inside ``m_of_n`` ten such antecedents turn "6 of 10 pyrimidines" into a
  unit that is never true (and the equalities add trainable constants);
* the rules are made trainable (``Theory.set_all_formulae_trainable``): PSyKI's theories are
  fixed by default, which makes its KBANN a network whose rule weights never change
  (``"frozen_rules": true`` in ``job.json`` keeps that default);
* the class rules come in the order of the job's classes, which is the order of PSyKI's
  output units (its class mapping does not reorder them).
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

POSITIONS = [p for p in range(-30, 31) if p != 0]
IUPAC = {"a": "a", "c": "c", "g": "g", "t": "t", "m": "ac", "r": "ag", "y": "ct"}
CLASSES = ("ei", "ie", "n")


def var(pos, base):
    """PSyKI variable (and column) name of the multi-hot column of ``base`` at ``pos``."""
    return f"X_{-pos}{base}" if pos < 0 else f"X{pos}{base}"


#: how a code of several bases is written: ``disjunction`` (the default) or, as earlier
#: versions of this script did, ``negated-equalities`` (kept to show what it does)
ENCODINGS = ("disjunction", "negated-equalities")


def literal(pos, code, encoding="disjunction"):
    """A base code at a position as a positive PSyKI antecedent: one variable, or the
    disjunction of the variables of the code's bases."""
    bases = IUPAC[code.lower()]
    if len(bases) == 1:
        return var(pos, bases)
    if encoding == "negated-equalities":
        return "\\+ (" + ", ".join(f"{var(pos, b)} = 0" for b in bases) + ")"
    return "(" + " ; ".join(var(pos, b) for b in bases) + ")"


def theory(encoding="disjunction") -> str:
    """Towell, Shavlik and Noordewier's splice-junction theory (the rules of
    kb/ski/splice.pl), written with one variable per multi-hot feature."""
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown encoding {encoding!r}")

    def seq(start, codes):
        i = POSITIONS.index(start)
        return [literal(POSITIONS[i + k], c, encoding) for k, c in enumerate(codes)]

    head = ", ".join(var(p, b) for p in POSITIONS for b in "acgt")
    lines = []
    for start in (-3, -4, -5):
        for codon in ("TAA", "TAG", "TGA"):
            lines.append(f"ei_stop({head}) :- {', '.join(seq(start, codon))}.")
    for start in (1, 2, 3):
        for codon in ("TAA", "TAG", "TGA"):
            lines.append(f"ie_stop({head}) :- {', '.join(seq(start, codon))}.")
    pyr = ", ".join(literal(p, "y", encoding) for p in range(-15, -5))
    lines.append(f"pyrimidine_rich({head}) :- m_of_n(6, {pyr}).")
    lines.append(f"class({head}, ei) :- {', '.join(seq(-3, 'MAGGTRAGT'))}, "
                 f"\\+ ei_stop({head}).")
    lines.append(f"class({head}, ie) :- pyrimidine_rich({head}), "
                 f"{', '.join(seq(-3, 'YAGG'))}, \\+ ie_stop({head}).")
    lines.append(f"class({head}, n) :- \\+ class({head}, ei), \\+ class({head}, ie).")
    return "\n".join(lines) + "\n"


def load(job_dir):
    job = np.load(os.path.join(job_dir, "job.npz"))
    cfg = json.load(open(os.path.join(job_dir, "job.json")))
    cols = [var(p, b) for p in POSITIONS for b in "acgt"]
    assert cols == cfg["columns"], "feature order differs from the theory's"
    assert tuple(cfg["classes"]) == CLASSES, "class order differs from the theory's"
    return job, cfg, cols


def psyki_theory(job_dir, X, y, cfg, cols):
    """The theory parsed by PSyKI (tuProlog), its rules trainable unless frozen."""
    import pandas as pd
    from psyki.logic import Theory

    frame = pd.DataFrame(X, columns=cols)
    frame["class"] = [CLASSES[k] for k in y]
    kb_file = os.path.join(job_dir, "splice-psyki.pl")
    with open(kb_file, "w") as fh:
        fh.write(theory(cfg.get("encoding", "disjunction")))
    th = Theory(kb_file, frame, {c: i for i, c in enumerate(CLASSES)})
    if not cfg.get("frozen_rules", False):
        th.set_all_formulae_trainable()
    return th


def build(th, n_features, cfg):
    """PSyKI's KBANN of the theory ``th`` (untrained)."""
    import tensorflow as tf
    from psyki.ski import Injector

    tf.get_logger().setLevel("ERROR")
    inp = tf.keras.Input((n_features,))
    return Injector.kbann(tf.keras.Model(inp, inp), omega=cfg["omega"]).inject(th)


def outputs(job_dir: str) -> int:
    job, cfg, cols = load(job_dir)
    X, y = job["X"].astype("float32"), job["y"].astype("int64")
    model = build(psyki_theory(job_dir, X, y, cfg, cols), X.shape[1], cfg)
    np.save(os.path.join(job_dir, "outputs.npy"), model.predict(X, verbose=0))
    return 0


#: "2 of A, B, C" written four ways, each with the same crisp meaning on 0/1 inputs
MOFN_DEMO = ("m_of_n(2, A, B, C)", "m_of_n(2, (A ; A), (B ; B), (C ; C))",
             "m_of_n(2, \\+ (A = 0), \\+ (B = 0), \\+ (C = 0))",
             "m_of_n(2, \\+ (A = 0, A = 0), \\+ (B = 0, B = 0), \\+ (C = 0, C = 0))")


def mofn_demo(omega: float = 4.0) -> int:
    """Output of PSyKI's untrained KBANN unit for "2 of A, B, C" on rows with 0, 1, 2 and 3
    of the inputs true (the crisp rule: false, false, true, true)."""
    import pandas as pd
    import tensorflow as tf
    from psyki.logic import Theory
    from psyki.ski import Injector

    tf.get_logger().setLevel("ERROR")
    X = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype="float32")
    frame = pd.DataFrame(X, columns=["A", "B", "C"])
    frame["class"] = ["no", "no", "yes", "yes"]
    print(f"PSyKI KBANN, omega {omega:g}: output of class yes on rows with 0, 1, 2, 3 of "
          f"A, B, C true (the rule: false, false, true, true)")
    for body in MOFN_DEMO:
        text = (f"class(A, B, C, yes) :- {body}.\n"
                f"class(A, B, C, no) :- \\+ class(A, B, C, yes).\n")
        th = Theory(text, frame, {"yes": 0, "no": 1})
        inp = tf.keras.Input((3,))
        net = Injector.kbann(tf.keras.Model(inp, inp), omega=omega).inject(th)
        out = net.predict(X, verbose=0)[:, 0]
        print(f"  {body:68s} " + " ".join(f"{v:.3f}" for v in out))
    return 0


def main(job_dir: str) -> int:
    import tensorflow as tf

    job, cfg, cols = load(job_dir)
    X, y, test = job["X"].astype("float32"), job["y"].astype("int64"), job["test"]
    starts, rows, labels = job["starts"], job["rows"], job["labels"]
    th = psyki_theory(job_dir, X, y, cfg, cols)
    n_members = len(starts) - 1
    acc = {"kbann": np.zeros(n_members), "uneducated": np.zeros(n_members)}
    for e in range(n_members):
        tr = rows[starts[e]:starts[e + 1]]
        ytr = labels[starts[e]:starts[e + 1]]
        for name in ("kbann", "uneducated"):
            tf.keras.utils.set_random_seed(int(cfg["seeds"][e]) + (0 if name == "kbann" else 1))
            if name == "kbann":
                model = build(th, X.shape[1], cfg)
            else:
                inp = tf.keras.Input((X.shape[1],))
                h = inp
                for w in cfg["hidden"]:
                    h = tf.keras.layers.Dense(w, activation="relu")(h)
                out = tf.keras.layers.Dense(len(CLASSES), activation="softmax")(h)
                model = tf.keras.Model(inp, out)
            model.compile(optimizer=tf.keras.optimizers.Adam(cfg["lr"]),
                          loss="sparse_categorical_crossentropy", metrics=["accuracy"])
            if not (name == "kbann" and cfg.get("frozen_rules", False)):
                # frozen rules leave PSyKI's network nothing to train (Keras refuses to fit
                # it): it is the untrained rule network at every level
                model.fit(X[tr], ytr, epochs=cfg["epochs"], batch_size=cfg["batch_size"],
                          verbose=0)
            pred = np.argmax(model.predict(X[test], verbose=0), axis=1)
            acc[name][e] = float(np.mean(pred == y[test]))
        print(f"member {e + 1}/{n_members}: kbann {acc['kbann'][e]:.4f} "
              f"uneducated {acc['uneducated'][e]:.4f}", flush=True)
    np.savez(os.path.join(job_dir, "acc.npz"), **acc)
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if args == ["--theory"]:
        print(theory(), end="")
        sys.exit(0)
    if args == ["--mofn-demo"]:
        sys.exit(mofn_demo())
    if len(args) == 2 and args[0] == "--outputs":
        sys.exit(outputs(args[1]))
    if len(args) != 1 or args[0].startswith("-"):
        sys.exit(f"usage: {sys.argv[0]} JOB_DIR | --outputs JOB_DIR | --theory | "
                 "--mofn-demo")
    sys.exit(main(args[0]))
