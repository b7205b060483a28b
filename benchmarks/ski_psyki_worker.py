"""PSyKI side of ``benchmarks/ski_psyki.py``: run with the Python of a separate environment
that has ``psyki`` (and its TensorFlow); never imported by nesybench.

Reads ``job.npz`` (the clean feature matrix, labels, the test rows, and per member its
training rows and labels), builds Towell's splice domain theory in PSyKI's Prolog syntax,
trains PSyKI's KBANN (Towell fuzzifier) and a Keras MLP of the same hidden widths as
nesybench's uneducated predictor on every member, and writes the test accuracies to
``acc.npz``.

    PSYKI_PYTHON benchmarks/ski_psyki_worker.py JOB_DIR
    PSYKI_PYTHON benchmarks/ski_psyki_worker.py --theory     # print the theory, nothing else
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

POSITIONS = [p for p in range(-30, 31) if p != 0]
IUPAC = {"a": "a", "c": "c", "g": "g", "t": "t", "m": "ac", "r": "ag", "y": "ct"}


def var(pos, base):
    return f"X_{-pos}{base}" if pos < 0 else f"X{pos}{base}"


def literal(pos, code):
    bases = IUPAC[code.lower()]
    if len(bases) == 1:
        return var(pos, bases)
    return "\\+ (" + ", ".join(f"{var(pos, b)} = 0" for b in bases) + ")"


def seq(start, codes):
    i = POSITIONS.index(start)
    return [literal(POSITIONS[i + k], c) for k, c in enumerate(codes)]


def theory() -> str:
    """Towell, Shavlik and Noordewier's splice-junction theory (the rules of
    kb/ski/splice.pl), written with one variable per multi-hot feature."""
    head = ", ".join(var(p, b) for p in POSITIONS for b in "acgt")
    lines = []
    for start in (-3, -4, -5):
        for codon in ("TAA", "TAG", "TGA"):
            lines.append(f"ei_stop({head}) :- {', '.join(seq(start, codon))}.")
    for start in (1, 2, 3):
        for codon in ("TAA", "TAG", "TGA"):
            lines.append(f"ie_stop({head}) :- {', '.join(seq(start, codon))}.")
    pyr = ", ".join(literal(p, "y") for p in range(-15, -5))
    lines.append(f"pyrimidine_rich({head}) :- m_of_n(6, {pyr}).")
    lines.append(f"class({head}, ei) :- {', '.join(seq(-3, 'MAGGTRAGT'))}, "
                 f"\\+ ei_stop({head}).")
    lines.append(f"class({head}, ie) :- pyrimidine_rich({head}), "
                 f"{', '.join(seq(-3, 'YAGG'))}, \\+ ie_stop({head}).")
    lines.append(f"class({head}, n) :- \\+ class({head}, ei), \\+ class({head}, ie).")
    return "\n".join(lines) + "\n"


def main(job_dir: str) -> int:
    import pandas as pd
    import tensorflow as tf
    from psyki.logic import Theory
    from psyki.ski import Injector

    tf.get_logger().setLevel("ERROR")
    job = np.load(os.path.join(job_dir, "job.npz"))
    cfg = json.load(open(os.path.join(job_dir, "job.json")))
    X, y, test = job["X"].astype("float32"), job["y"].astype("int64"), job["test"]
    starts, rows, labels = job["starts"], job["rows"], job["labels"]
    classes = cfg["classes"]
    cols = [var(p, b) for p in POSITIONS for b in "acgt"]
    assert cols == cfg["columns"], "feature order differs from the theory's"
    frame = pd.DataFrame(X, columns=cols)
    frame["class"] = [classes[k] for k in y]
    kb_file = os.path.join(job_dir, "splice-psyki.pl")
    with open(kb_file, "w") as fh:
        fh.write(theory())
    th = Theory(kb_file, frame, {c: i for i, c in enumerate(classes)})
    n_members = len(starts) - 1
    acc = {"kbann": np.zeros(n_members), "uneducated": np.zeros(n_members)}
    for e in range(n_members):
        tr = rows[starts[e]:starts[e + 1]]
        ytr = labels[starts[e]:starts[e + 1]]
        for name in ("kbann", "uneducated"):
            tf.keras.utils.set_random_seed(int(cfg["seeds"][e]) + (0 if name == "kbann" else 1))
            inp = tf.keras.Input((X.shape[1],))
            if name == "kbann":
                base = tf.keras.Model(inp, inp)
                model = Injector.kbann(base, omega=cfg["omega"]).inject(th)
            else:
                h = inp
                for w in cfg["hidden"]:
                    h = tf.keras.layers.Dense(w, activation="relu")(h)
                out = tf.keras.layers.Dense(len(classes), activation="softmax")(h)
                model = tf.keras.Model(inp, out)
            model.compile(optimizer=tf.keras.optimizers.Adam(cfg["lr"]),
                          loss="sparse_categorical_crossentropy", metrics=["accuracy"])
            model.fit(X[tr], ytr, epochs=cfg["epochs"], batch_size=cfg["batch_size"],
                      verbose=0)
            pred = np.argmax(model.predict(X[test], verbose=0), axis=1)
            acc[name][e] = float(np.mean(pred == y[test]))
        print(f"member {e + 1}/{n_members}: kbann {acc['kbann'][e]:.4f} "
              f"uneducated {acc['uneducated'][e]:.4f}", flush=True)
    np.savez(os.path.join(job_dir, "acc.npz"), **acc)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--theory"]:
        print(theory(), end="")
        sys.exit(0)
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(f"usage: {sys.argv[0]} JOB_DIR | --theory")
    sys.exit(main(sys.argv[1]))
