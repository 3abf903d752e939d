"""The ``ray`` executor: each case is a Ray task that asks for one GPU; the driver keeps the lock.

Ray is the scheduler here.  This module submits every case the Ledger says
may start (each kernel's middle shape first, its other shapes once that one
finished), waits for tasks one at a time with ``ray.wait``, and hands each
result to the Ledger, which alone writes kiln.lock on the machine that drives
the build.  Which node runs which task, and when, is Ray's business.

What the workers get, so that a remote cluster works as well as a local one:

* the project directory as the job's ``working_dir`` (uploaded by Ray, big
  build outputs excluded), so the kernels import from the driver's source;
* this ``tuning`` package as a ``py_module``, so workers run the driver's
  kiln rather than whatever kiln a node has installed;
* the driver's ``HELION_*`` variables and ``KILN_BUILDING=1``.

torch, helion (and jax for Pallas interpret) must already be installed on
the nodes, at the versions the driver uses: configs are tied to them.

A task whose worker process dies is retried once by Ray itself
(``max_retries=1``); a second death is reported as a failed case.  An
exception raised by the tuning code is not retried (``retry_exceptions`` is
off): it is the case's failure, reported at once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .errors import SettingsError, first_line
from .ledger import Ledger, tune_job
from .plan import Case
from .tune import CaseResult, TuneRun

RAY_VERSION_TESTED = "2.60.0"
# Paths the task's working_dir upload leaves out (gitignore syntax, as Ray reads them).
UPLOAD_EXCLUDES = [".git/", "__pycache__/", "/build/", "/dist/", "/wheelhouse/", "*.egg-info/", ".venv/", "*.whl",
                   ".pytest_cache/", "/kiln.lock"]


def import_ray() -> Any:
    """Ray is optional: only ``executor = "ray"`` needs it, and then says how to get it."""
    try:
        import ray
    except ImportError:
        raise SettingsError(
            f"setting 'executor' is 'ray' but Ray is not installed in this build environment: "
            f"pip install ray=={RAY_VERSION_TESTED} (or use executor = \"local\")."
        ) from None
    return ray


def job_runtime_env(project_dir: Path, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """What every task of this build carries to its node: the project, this kiln, the tuning environment."""
    import tuning

    environ = dict(os.environ if environ is None else environ)
    env_vars = {k: v for k, v in environ.items() if k.startswith("HELION_")}
    env_vars["KILN_BUILDING"] = "1"
    return {
        "working_dir": str(project_dir),
        "py_modules": [str(Path(tuning.__file__).parent)],
        "excludes": UPLOAD_EXCLUDES,
        "env_vars": env_vars,
    }


def run_ray(run: TuneRun, address: str | None = None) -> list[CaseResult]:
    """Tune ``run.plan.todo`` as Ray tasks on the cluster at ``address`` (None: a local Ray runtime)."""
    ray = import_ray()
    from ray.exceptions import RayError, RayTaskError

    ledger = Ledger(run)
    runtime_env = job_runtime_env(ledger.run.project_dir)
    started_here = not ray.is_initialized()
    if started_here:  # Ray uploads local directories only for a whole job, so the driver connects here
        ray.init(address=address or None, runtime_env=runtime_env)
    task = ray.remote(tune_job).options(
        num_gpus=1 if run.device == "cuda" else 0, num_cpus=1, max_retries=1, retry_exceptions=False,
        # A caller that had already connected keeps its job's runtime_env (it must carry the project and
        # kiln itself); the tuning environment variables still go with every task.
        runtime_env=None if started_here else {"env_vars": runtime_env["env_vars"]})
    running: dict[Any, Case] = {}
    try:
        while True:
            while (ready := ledger.next_job()) is not None:  # Ray queues what the cluster cannot run yet
                case, job = ready
                running[task.remote(job)] = case
            if not running:
                break
            (ref,), _ = ray.wait(list(running), num_returns=1)
            case = running.pop(ref)
            try:
                entry = ray.get(ref)
            except RayTaskError as e:  # the tuning code raised: the case's own failure
                ledger.raised(case, e.cause if isinstance(e.cause, BaseException) else e)
            except RayError as e:  # the worker (or its node) died, and Ray's one retry died too
                ledger.gave_up(case, f"Ray task died twice ({type(e).__name__}: {first_line(e)})")
            else:
                ledger.tuned(case, entry)
    finally:
        for ref in running:
            ray.cancel(ref, force=True)
        if started_here:
            ray.shutdown()
    return ledger.results
