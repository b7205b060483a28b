"""A watchdog that stops a local Ray instance when the driver that started it dies.

Ray's own processes (GCS, raylet, agents, workers) are children of the driver but not of
its cells' worker processes, so a driver killed alone (``kill -9``, the OOM killer) would
leave them running. The watchdog is a small process in its own session that keeps a list of
Ray's process trees (the children the driver gained while Ray started, and their
descendants) while the driver lives; once the driver is gone it SIGKILLs every process of
that list that is still the same process (same start time), and exits.

Linux only (it reads ``/proc``); elsewhere it is not started.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

_PROC = Path("/proc")


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of a process, or None when it is gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[19])


def children_of(pid: int) -> set[int]:
    """Direct children of ``pid`` (from /proc)."""
    out = set()
    for entry in _PROC.iterdir() if _PROC.is_dir() else ():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None and st[0] == pid:
                out.add(int(entry.name))
    return out


def _tree(roots: dict[int, int]) -> dict[int, int]:
    """``roots`` (pid -> start time, still the same process) and all their descendants."""
    table = {}
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None:
                table[int(entry.name)] = st
    out = {p: t for p, t in roots.items() if p in table and table[p][1] == t}
    grew = True
    while grew:
        grew = False
        for pid, (ppid, start) in table.items():
            if ppid in out and pid not in out:
                out[pid] = start
                grew = True
    return out


def main(argv: list[str]) -> int:
    driver, driver_start = int(argv[0]), int(argv[1])
    roots = {}
    for p in argv[2:]:
        st = _stat(int(p))
        if st is not None:
            roots[int(p)] = st[1]
    seen = _tree(roots)
    # the driver waits for this line: from now on its Ray processes are covered
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    while _alive(driver) and _same(driver, driver_start):
        seen.update(_tree(seen))
        seen = {p: t for p, t in seen.items() if _same(p, t)}
        time.sleep(0.5)
    for _ in range(3):      # what the dying tree may still spawn
        seen.update(_tree(seen))
        for pid, start in list(seen.items()):
            if _same(pid, start):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.2)
    return 0


def _same(pid: int, start: int) -> bool:
    st = _stat(pid)
    return st is not None and st[1] == start


def _alive(pid: int) -> bool:
    st = _stat(pid)
    if st is None:
        return False
    try:
        state = (_PROC / str(pid) / "stat").read_text()
        return state[state.rindex(")") + 2] != "Z"
    except (OSError, ValueError, IndexError):
        return False


_STARTED: list = []


def watch_ray(before: set[int]) -> None:
    """Start the watchdog for the Ray processes this driver gained since ``before`` (its
    children before ``ray.init``); once per process."""
    if _STARTED or not sys.platform.startswith("linux"):
        return
    roots = sorted(children_of(os.getpid()) - before)
    me = _stat(os.getpid())
    if not roots or me is None:
        return
    # run as a plain script (standard library only): it starts in a few milliseconds
    proc = subprocess.Popen([sys.executable, "-I", str(Path(__file__).resolve()),
                             str(os.getpid()), str(me[1]), *map(str, roots)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    proc.stdout.readline()              # its first look at Ray's processes is taken
    proc.stdout.close()
    _STARTED.append(proc)          # kept: it outlives this driver on purpose


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
