"""Helpers of the tests that start commands and signal them: whether a process is alive,
and what to report when one does not stop (its signal state and every thread's stack)."""
from __future__ import annotations

import signal
import subprocess
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def hang_report(proc: subprocess.Popen) -> str:
    """For a command that did not stop on a signal: its signal dispositions and pending
    signals (``/proc``), the signals this process blocks, and, after SIGABRT, the stacks
    that faulthandler prints (the command must run with ``PYTHONFAULTHANDLER=1`` and its
    stderr piped)."""
    try:
        status = (Path("/proc") / str(proc.pid) / "status").read_text()
        sigs = [ln for ln in status.splitlines() if ln.startswith(("Sig", "ShdPnd"))]
    except OSError:
        sigs = ["(gone)"]
    ours = sorted(s.name for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))
    proc.send_signal(signal.SIGABRT)
    _, err = proc.communicate(timeout=30)
    if isinstance(err, bytes):
        err = err.decode(errors="replace")
    return f"signal state {sigs}, ours blocked {ours}; its stacks:\n{(err or '')[-6000:]}"
