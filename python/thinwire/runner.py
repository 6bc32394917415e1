"""One runner for sweeps and studies: tasks run on Dask (a local cluster of worker
processes by default, or an existing scheduler), with one progress bar, and every
result is saved as it arrives, so an interrupted run resumes where it stopped.

A *group* is a list of tasks with a function that runs a batch of them and a place
to keep the results; `execute` runs any number of groups on one client. Sweeps
keep their rows in `runs.parquet` (sweeping.py); studies use `run_tasks`, which keeps
each task's result (the task's own reduction of its run: a few numbers, a short
series) in a JSON-lines file keyed by a hash of the function and the task.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


@dataclass
class Group:
    """Tasks that share a batch function and a store. `run_batch(batch)` runs a list
    of tasks on a worker and returns their results in order; `save(keys, results)`
    keeps them (called in the parent as batches complete); `flush()` is called at
    least every 10 s and at the end."""

    todo: list[tuple[str, Any]]
    run_batch: Callable[[list], list]
    save: Callable[[list[str], list], None]
    flush: Callable[[], None] = lambda: None
    done: int = field(default=0)
    # Tasks that each take seconds (a study's long runs): submitted one per Dask
    # task and ahead of every other group, so they spread over the workers and
    # the short tasks fill in behind them. In batches with the others, one worker
    # could get a batch of twenty long runs while the rest idle at the end.
    long: bool = False


@contextlib.contextmanager
def _main_not_rerun():
    """While a local cluster's worker processes are started (and restarted), hide
    the user's main module from multiprocessing's spawn, which would otherwise run
    it again in every worker (`__mp_main__`, by path for a script, by name for
    `python -m`) and, in one without an `if __name__ == "__main__":` guard, start
    the sweep again there (Dask then fails with pages of Nanny tracebacks). The
    workers need nothing from it: tasks are functions of thinwire's modules, and
    Dask pickles functions defined in `__main__` by value. Notebooks and the REPL
    have neither a path nor a name to hide."""
    main = sys.modules.get("__main__")
    saved = {}
    if main is not None:
        if getattr(main, "__file__", None) is not None:
            saved["__file__"] = main.__file__
            del main.__file__
        if getattr(main, "__spec__", None) is not None:
            saved["__spec__"] = main.__spec__
            main.__spec__ = None
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(main, k, v)


_WORKER_LOG_ENV = "DASK_LOGGING__DISTRIBUTED"


def client(scheduler: str | None, n_workers: int):
    """A Dask client on `scheduler`, or on a local cluster of `n_workers` processes
    (spawned, so no thread state of the parent is forked). Returns (client, cluster)."""
    from dask.distributed import Client, LocalCluster

    from .api import ScenarioError

    if scheduler:
        try:
            return Client(scheduler, timeout="5s"), None
        except (OSError, ValueError, TypeError) as e:
            # ValueError: an address Dask cannot parse (e.g. no port).
            why = str(e).splitlines()[0] if str(e) else e.__class__.__name__
            raise ScenarioError(
                f"--scheduler {scheduler}: cannot connect ({why}); give an address such as tcp://host:8786"
            ) from None
    # The workers ignore Ctrl-C (a process started while SIGINT is ignored keeps
    # ignoring it): the parent stops the sweep, saves what is done and closes the
    # cluster, instead of every worker printing a traceback.
    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    # The workers' loggers quiet too: `silence_logs` reaches only the nanny's logger
    # in a worker process, and a worker whose scheduler closes under it (Ctrl-C)
    # logged a heartbeat traceback at ERROR. A worker process configures its logging
    # when it imports Dask, from its environment, which it inherits from here; task
    # failures still reach the client as exceptions.
    env_old = os.environ.get(_WORKER_LOG_ENV)
    os.environ[_WORKER_LOG_ENV] = "critical"
    try:
        cluster = LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            # Its HTTP server on a free port: never "8787 in use" beside another cluster.
            dashboard_address=":0",
            silence_logs=40,
        )
    finally:
        if main:
            signal.signal(signal.SIGINT, old)
        if env_old is None:
            del os.environ[_WORKER_LOG_ENV]
        else:
            os.environ[_WORKER_LOG_ENV] = env_old
    return Client(cluster), cluster


def execute(
    groups: list[Group],
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = True,
    batch: int | None = None,
    desc: str = "run",
) -> None:
    """Runs every group's pending tasks on one client with one progress bar."""
    total = sum(len(g.todo) for g in groups)
    if total == 0:
        return
    n_workers = workers or os.cpu_count() or 1
    size = batch or max(1, min(20, total // (4 * n_workers)))
    with _main_not_rerun():
        _execute(groups, scheduler, n_workers, size, total, progress, desc)


def _execute(groups: list[Group], scheduler, n_workers: int, size: int, total: int, progress: bool, desc: str) -> None:
    from dask.distributed import as_completed
    from tqdm import tqdm

    cl, cluster = client(scheduler, n_workers)
    last_flush = time.monotonic()
    bar = tqdm(total=total, unit="run", disable=not progress, file=sys.stderr, desc=desc)
    try:
        futures = {}
        for g in sorted(groups, key=lambda g: not g.long):
            step = 1 if g.long else size
            for i in range(0, len(g.todo), step):
                part = g.todo[i : i + step]
                fut = cl.submit(g.run_batch, [t for _, t in part], pure=False)
                futures[fut] = (g, [k for k, _ in part])
        for fut in as_completed(list(futures)):
            g, keys = futures[fut]
            res = fut.result()
            g.save(keys, res)
            g.done += len(res)
            bar.update(len(res))
            if time.monotonic() - last_flush > 10:
                for x in groups:
                    x.flush()
                last_flush = time.monotonic()
    except BaseException as e:
        # Ctrl-C, SIGTERM or an error: what is done is saved; the CLI prints one line.
        for g in groups:
            g.flush()
        bar.close()
        if not isinstance(e, Exception):
            e.add_note(f"{sum(g.done for g in groups):,} runs saved; run the same command again to resume")
            # Shutting down mid-task makes Dask's own loggers print tracebacks.
            for name in ("distributed", "tornado", "asyncio"):
                logging.getLogger(name).setLevel(logging.CRITICAL + 1)
        raise
    finally:
        bar.close()
        cl.close()
        if cluster is not None:
            cluster.close()
    for g in groups:
        g.flush()


def task_key(fn: Callable, task: Any) -> str:
    """A task's identity: its function's name and its (JSON) arguments."""
    name = f"{fn.__module__}.{fn.__qualname__}"
    return hashlib.sha256(json.dumps([name, task], sort_keys=True, default=str).encode()).hexdigest()[:20]


def _apply(fn: Callable, tasks: list) -> list:
    # Results cross processes and the store as JSON, so a fresh result and a resumed
    # one are the same Python values.
    return [json.loads(json.dumps(fn(t))) for t in tasks]


class _Store:
    """JSON lines {"key", "result"}, appended as results arrive (a cut last line is
    ignored when read back)."""

    def __init__(self, path: Path):
        self.path = path
        self.results: dict[str, Any] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(rec, dict) and "key" in rec:
                    self.results[rec["key"]] = rec.get("result")
        self.pending: list[str] = []

    def save(self, keys: list[str], results: list) -> None:
        for k, r in zip(keys, results):
            self.results[k] = r
            self.pending.append(json.dumps({"key": k, "result": r}))

    def flush(self) -> None:
        if self.pending:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a+b") as f:
                # After a cut last line (a crash mid-write), start on a new line.
                f.seek(0, 2)
                cut = False
                if f.tell() > 0:
                    f.seek(-1, 2)
                    cut = f.read(1) != b"\n"
                f.write((("\n" if cut else "") + "\n".join(self.pending) + "\n").encode())
            self.pending = []

    def settle(self, keys: list[str]) -> None:
        """Once every task has its result: the file rewritten with one line per
        key in the tasks' order (then any other results it holds, kept, in their
        order), so that the same study writes the same bytes however its workers
        finished (results arrive in completion order)."""
        from .outputs import write_text

        self.flush()
        if not self.path.exists() or any(k not in self.results for k in keys):
            return
        order = dict.fromkeys(keys) | dict.fromkeys(self.results)
        lines = [json.dumps({"key": k, "result": self.results[k]}) for k in order]
        text = "\n".join(lines) + "\n"
        if self.path.read_text() != text:
            write_text(self.path, text)


def tasks_group(fn: Callable, tasks: list, store: Path, long: bool = False) -> tuple[Group, _Store, list[str]]:
    """The group for `fn` over `tasks` keeping results in `store`, the store, and
    the tasks' keys in order; `long`: each task takes seconds (see `Group.long`)."""
    import functools

    st = _Store(store)
    keys = [task_key(fn, t) for t in tasks]
    todo = [(k, t) for k, t in zip(keys, tasks) if k not in st.results]
    # Duplicate tasks run once.
    seen: set[str] = set()
    todo = [(k, t) for k, t in todo if not (k in seen or seen.add(k))]
    return Group(todo, functools.partial(_apply, fn), st.save, st.flush, long=long), st, keys


def run_tasks(
    fn: Callable,
    tasks: list,
    store: Path,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = True,
    desc: str = "run",
    batch: int | None = None,
) -> list:
    """`[fn(t) for t in tasks]`, computed on the cluster (one progress bar), resumed
    from and saved to `store`. `fn` must be a module-level function of one
    JSON-like argument returning a JSON-like value."""
    g, st, keys = tasks_group(fn, tasks, store)
    execute([g], scheduler, workers, progress, batch, desc)
    st.settle(keys)
    return [st.results[k] for k in keys]
