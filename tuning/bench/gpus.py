"""`kiln bench --gpus 0,1`: one `kiln bench --shard i/N` child per GPU, all writing one store.

Why child processes (not threads or a pool in this process): each child is an
ordinary, resumable ``kiln bench`` pinned to one GPU with
``CUDA_VISIBLE_DEVICES``, so a child that dies or is killed costs only its
current (case, strategy), and rerunning the same command resumes every shard
from the store.  The children write the same store file; :meth:`Store.put`
serialises those writes under the store's file lock.

Ratios stay within one process: a shard is a set of whole *kernels* (a
strategy's earlier shapes seed its later ones), and all the strategies of a
case run in the same child, on the same GPU, each re-measured
next to the lfbo config in one fresh process.  Splitting cases over GPUs never
mixes two GPUs' conditions inside one case's ratios.  Each child measures its
own GPU's peaks (same GPU model, so the same run key in the store).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from tuning.errors import KilnError

ROOT = Path(__file__).resolve().parents[2]
SHARD_FORM = "K/N with 0 <= K < N, e.g. --shard 0/2"
GPU_TOKEN = re.compile(r"^(\d+|GPU-[0-9A-Fa-f-]+|MIG-[0-9A-Za-z/-]+)$")  # what CUDA_VISIBLE_DEVICES accepts
GRACE_S = 60  # after Ctrl-C / SIGINT: time for children to write their store and exit before they are killed


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> (K, N); a clear error naming the option otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 0 <= int(m.group(1)) < int(m.group(2)):
        raise KilnError(f"--shard {text!r}: write {SHARD_FORM}")
    return int(m.group(1)), int(m.group(2))


def parse_gpus(text: str, visible: Callable[[], list[str]] | None = None) -> list[str]:
    """``"auto"`` (every visible GPU) or a comma list of CUDA device ids, each at most once."""
    if text.strip() == "auto":
        if visible is None:
            from tuning.executor import visible_gpus as visible
        gpus = visible()
        if not gpus:
            raise KilnError("--gpus auto: no CUDA GPU visible here (torch sees none and CUDA_VISIBLE_DEVICES is unset or empty)")
        return gpus
    gpus = [g.strip() for g in text.split(",")]
    bad = [g for g in gpus if not GPU_TOKEN.match(g)]
    if bad or not gpus:
        raise KilnError(f"--gpus {text!r}: write auto or a comma list of CUDA device ids, e.g. --gpus 0,1")
    if len(set(gpus)) != len(gpus):
        raise KilnError(f"--gpus {text!r}: a GPU is listed twice; each GPU runs one shard")
    return gpus


def refuse_cpu(device_setting: str) -> None:
    """--gpus is for CUDA GPUs; on CPU (Pallas interpret) shards are run by hand with --shard.

    Why not split CPU shards automatically: interpret-mode tuning already uses
    every core for Helion's precompile, so two shards on one machine mostly
    halve each other's speed and add timing noise to both.
    """
    if device_setting in ("cpu", "none"):
        raise KilnError(f"--gpus launches one process per CUDA GPU, but the device setting is {device_setting!r}; "
                        "on CPU run shards yourself if you must, e.g. `kiln bench --shard 0/2` and `kiln bench --shard 1/2` "
                        "with the same --store (they share it safely)")


def child_envs(gpus: Sequence[str], base: dict[str, str] | None = None) -> list[dict[str, str]]:
    """Per child: the parent's environment, one GPU, cores // N precompile jobs, this repository importable."""
    from tuning.executor import worker_envs

    base = dict(os.environ if base is None else base)
    path = os.pathsep.join(p for p in [str(ROOT), base.get("PYTHONPATH", "")] if p)
    return [{**base, **w, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"} for w in worker_envs(list(gpus), "cuda")]


def child_commands(bench_args: Sequence[str], count: int) -> list[list[str]]:
    """``python -m tuning.cli bench <bench_args> --shard i/count`` for i in range(count)."""
    return [[sys.executable, "-m", "tuning.cli", "bench", *bench_args, "--shard", f"{i}/{count}"] for i in range(count)]


class Child(Protocol):
    """What the parent needs of a launched child: subprocess.Popen fits; tests pass a fake."""

    stdout: Iterable[str] | None

    def wait(self, timeout: float | None = None) -> int: ...
    def poll(self) -> int | None: ...
    def send_signal(self, sig: int) -> None: ...
    def kill(self) -> None: ...


def popen(cmd: list[str], env: dict[str, str]) -> Child:
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                            errors="replace")


@dataclass
class Outcome:
    gpu: str
    shard: str
    returncode: int


def run_children(gpus: Sequence[str], bench_args: Sequence[str], launch: Callable[[list[str], dict[str, str]], Child] | None = None,
                 out: IO[str] | None = None, env: dict[str, str] | None = None) -> list[Outcome]:
    """Start one child per GPU, prefix and stream their output (``[gpu0] ...``), wait for all.

    On KeyboardInterrupt (Ctrl-C, ``timeout -s INT``) the children get SIGINT
    too (if the signal did not reach their process group already) and
    :data:`GRACE_S` to finish writing; what they stored stays stored.
    """
    out, launch = out or sys.stderr, launch or popen  # looked up at call time: tests replace popen with a fake
    cmds, envs = child_commands(bench_args, len(gpus)), child_envs(gpus, env)
    lock = threading.Lock()
    children: list[Child] = []
    pumps: list[threading.Thread] = []
    for gpu, cmd, cenv in zip(gpus, cmds, envs):
        _say(out, lock, f"kiln bench: gpu{gpu}: {' '.join(cmd[1:])} (CUDA_VISIBLE_DEVICES={cenv['CUDA_VISIBLE_DEVICES']}, "
                        f"HELION_AUTOTUNE_PRECOMPILE_JOBS={cenv['HELION_AUTOTUNE_PRECOMPILE_JOBS']})")
        child = launch(cmd, cenv)
        children.append(child)
        pump = threading.Thread(target=_pump, args=(child.stdout, f"[gpu{gpu}] ", out, lock), daemon=True)
        pump.start()
        pumps.append(pump)
    try:
        with _sigterm_as_interrupt():
            codes = [c.wait() for c in children]
    except KeyboardInterrupt:
        _stop(children)
        raise
    finally:
        for p in pumps:
            p.join(timeout=5)
    return [Outcome(g, f"{i}/{len(gpus)}", rc) for i, (g, rc) in enumerate(zip(gpus, codes))]


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (`timeout`'s default, a scheduler's stop) stops the children the way Ctrl-C does, not orphaning them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _say(out: IO[str], lock: threading.Lock, line: str) -> None:
    with lock:
        out.write(line.rstrip("\n") + "\n")
        out.flush()


def _pump(stream: Iterable[str] | None, prefix: str, out: IO[str], lock: threading.Lock) -> None:
    """Copy a child's lines to ``out`` with its prefix, whole lines at a time so children don't interleave mid-line."""
    for line in stream or ():
        _say(out, lock, prefix + line)


def _stop(children: list[Child]) -> None:
    """Let children that got the same SIGINT (same process group) exit; SIGINT the rest; kill after GRACE_S.

    The short first wait avoids a second SIGINT landing in a child's own clean-up.
    """
    import time

    _wait_all(children, time.monotonic() + 5)
    for c in children:
        if c.poll() is None:
            c.send_signal(signal.SIGINT)
    _wait_all(children, time.monotonic() + GRACE_S)
    for c in children:
        if c.poll() is None:
            c.kill()
            c.wait()


def _wait_all(children: list[Child], deadline: float) -> None:
    import time

    for c in children:
        try:
            c.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass


def describe_failures(outcomes: list[Outcome]) -> list[str]:
    """One line per child that exited non-zero, naming its GPU and shard."""
    return [f"kiln bench: gpu{o.gpu} (shard {o.shard}) {_meaning(o.returncode)}" for o in outcomes if o.returncode != 0]


def _meaning(rc: int) -> str:
    if rc < 0:
        return f"was killed by signal {-rc} ({signal.Signals(-rc).name if -rc in signal.valid_signals() else '?'})"
    what = {1: "some of its (case, strategy) runs failed; see the store", 2: "kiln error; see its log above"}
    return f"exited {rc}" + (f": {what[rc]}" if rc in what else "")
