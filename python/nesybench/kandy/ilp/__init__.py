"""KANDY as an ILP problem: Aleph-ready export and evaluation of learned theories.

Paper, main text §4 "Symbolic models" and supplementary §2-§4.5.3. Two encodings of a sample:

* **natural** (NAT): the sample is a nested term, the example is ``valid(stack([...]))``;
* **pointer** (PTR): every composition is a constant ``cNNNNNN`` defined by a fact
  ``defined_as(c000001, stack, [triangle_red_small, c000002])``; the example is
  ``valid(sNNNNN)`` and ``sample_is(sNNNNN, c000000)`` links it to its root object.

and three background-knowledge sizes, ``minimal`` (§4.5.1), ``mid`` (the paper's 39 predicates of
§4.5: without the domain definitions and without the named objects) and ``large`` (``mid`` + the
"cheat" predicates of footnote 9 / §4.5.2: named objects, symmetric_list/1, forall_shared_*/2,
pseudo_palindrome*/1), in ``kb/kandy/ilp/<encoding>_<kb>.pl``.

Pointer constants are deterministic: within a task, samples are numbered over the splits in the
order train, val, test (rows in ``annotations.csv`` order), ``s00001`` first, and objects in
depth-first pre-order, ``c000000`` first. Export and evaluation use the same numbering, so a learned
fact such as ``valid(s00003)`` can never name a test sample.

One module per job, one way through them: :mod:`.task` reads a dataset's task once
(:func:`load_task` → :class:`IlpTask`), :mod:`.bias` holds the language bias and settings,
:mod:`.pointer` the pointer encoding, :mod:`.export` writes Aleph's files and :mod:`.evaluate`
scores a learned theory. ``kandy ilp-run`` reads each task once and hands the same
:class:`IlpTask` to the export and to the evaluation.

Public functions: :func:`load_task`, :func:`export_task`, :func:`export_all`,
:func:`evaluate_theory`, :func:`theory_size`; result dataclass :class:`IlpScore`.
"""
from .bias import (DEFAULT_NEWVARS, DEFAULT_SETTINGS, ENCODINGS, KBS, SPLITS, aleph_settings,
                   bias_text, bk_file, bk_text, determinations, mode_declarations)
from .evaluate import DEFAULT_FRESH, IlpScore, evaluate_theory, theory_size
from .export import export_all, export_task
from .pointer import pointer_encode, pointer_facts, pointer_symbol
from .task import IlpTask, Sample, load_task, task_ids

__all__ = ["DEFAULT_FRESH", "DEFAULT_NEWVARS", "DEFAULT_SETTINGS", "ENCODINGS", "KBS", "SPLITS",
           "IlpScore", "IlpTask", "Sample", "aleph_settings", "bias_text", "bk_file", "bk_text",
           "determinations", "evaluate_theory", "export_all", "export_task", "load_task",
           "mode_declarations", "pointer_encode", "pointer_facts", "pointer_symbol",
           "task_ids", "theory_size"]
