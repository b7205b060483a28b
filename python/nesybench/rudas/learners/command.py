"""Any outside rule learner through a command template (``--system cmd --command TEMPLATE``).

The template is run by ``/bin/sh`` after its placeholders are replaced by shell-quoted
values: ``{train}`` the training facts (``train.txt``, one ``p(c1,c2).`` per line),
``{dataset}`` the dataset folder, ``{out}`` a file the program writes its rules to,
``{seed}``, ``{max_body}`` the maximal rule length, ``{targets}`` the target predicates
(comma-separated). Without ``{out}`` in the template the rules are read from its standard
output. The rules are clauses in the learned-rules format (one per line or spread over
lines up to the final dot), each optionally with a confidence, either ``0.8::p(X,Y) :-
q(X,Y).`` or a line ``% confidence 0.8`` just above the clause. A non-zero exit status, a
run past ``--time-limit`` or a clause that does not parse is one error (exit status 2).
"""
from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from ...errors import NesyError
from . import Dataset, Learner, parse_rules

PLACEHOLDERS = ("train", "dataset", "out", "seed", "max_body", "targets")


class Command(Learner):
    OPTIONS = {"command": "the command template (also --command)"}

    def learn(self, ds: Dataset) -> list:
        template = self.o.options.get("command")
        if not template or not str(template).strip():
            raise NesyError("--system cmd needs --command 'PROGRAM {train} {out}'",
                            field="command")
        with tempfile.TemporaryDirectory(prefix="nesybench-rudas-cmd-") as work:
            out = Path(work) / "rules.pl"
            values = {"train": ds.train_file, "dataset": ds.path, "out": out,
                      "seed": self.o.seed, "max_body": self.max_body(ds),
                      "targets": ",".join(self.targets(ds))}
            try:
                cmd = str(template).format(**{k: shlex.quote(str(v)) for k, v in values.items()})
            except (KeyError, IndexError, ValueError) as exc:
                raise NesyError(f"bad --command template ({exc!s}); placeholders: "
                                + ", ".join("{" + p + "}" for p in PLACEHOLDERS),
                                field="command") from None
            from ...kandy.learn.aleph import _die_with_parent, _kill_group  # noqa: PLC0415
            proc = subprocess.Popen(["/bin/sh", "-c", cmd], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                    start_new_session=True,
                                    preexec_fn=_die_with_parent if os.name == "posix" else None)
            try:
                stdout, stderr = proc.communicate(timeout=self.o.time_limit)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                raise NesyError(f"the learner did not finish within --time-limit "
                                f"{self.o.time_limit} s", field="command") from None
            except BaseException:
                _kill_group(proc)
                raise
            if proc.returncode != 0:
                tail = stderr.decode("utf-8", "replace").strip()[-500:]
                raise NesyError(f"the learner failed (exit status {proc.returncode})"
                                + (f": {tail}" if tail else ""), field="command")
            if "{out}" in str(template):
                if not out.is_file():
                    raise NesyError("the learner wrote no rules file ({out})", field="command")
                text, source = out.read_text(encoding="utf-8", errors="replace"), "{out}"
            else:
                text, source = stdout.decode("utf-8", "replace"), "learner output"
            return parse_rules(text, source=source)
