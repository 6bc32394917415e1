"""The one runner of sweeps and studies (thinwire.runner): results in task order,
saved as they arrive, resumed from what was saved (a cut last line included)."""

import json
import math

from thinwire.runner import Group, execute, run_tasks, task_key


def test_run_tasks_computes_in_order_and_resumes(tmp_path):
    store = tmp_path / "runs.jsonl"
    tasks = [4.0, 9.0, 16.0]
    assert run_tasks(math.sqrt, tasks, store, workers=1, progress=False) == [2.0, 3.0, 4.0]
    lines = store.read_text().splitlines()
    assert len(lines) == 3 and {json.loads(x)["key"] for x in lines} == {task_key(math.sqrt, t) for t in tasks}
    # Lose one result, mark another (a re-run would correct it), cut the file
    # mid-line, add a task: only what is missing runs.
    kept = [x for x in lines if json.loads(x)["key"] != task_key(math.sqrt, 9.0)]
    kept = [x.replace("2.0", "-2.0") if json.loads(x)["key"] == task_key(math.sqrt, 4.0) else x for x in kept]
    store.write_text("\n".join(kept) + '\n{"key": "cut')
    assert run_tasks(math.sqrt, tasks + [25.0], store, workers=1, progress=False) == [-2.0, 3.0, 4.0, 5.0]
    # Complete: one line per task, in the tasks' order, the cut line gone.
    assert [json.loads(x)["key"] for x in store.read_text().splitlines()] == [
        task_key(math.sqrt, t) for t in tasks + [25.0]
    ]
    # Everything there: nothing runs (no cluster is even started).
    before = store.read_text()
    assert run_tasks(math.sqrt, tasks, store, workers=1, progress=False) == [-2.0, 3.0, 4.0]
    assert store.read_text() == before


def test_a_complete_store_is_written_in_task_order_whatever_the_completion_order(tmp_path):
    store = tmp_path / "runs.jsonl"
    tasks = [1.0, 4.0, 9.0]
    keys = [task_key(math.sqrt, t) for t in tasks]
    # As two workers might have left it: out of order, and a result of another
    # task (an earlier form of the study) that stays.
    rec = lambda k, r: json.dumps({"key": k, "result": r})  # noqa: E731
    store.write_text("\n".join([rec(keys[2], 3.0), rec("other", 7), rec(keys[0], 1.0)]) + "\n")
    assert run_tasks(math.sqrt, tasks, store, workers=2, progress=False) == [1.0, 2.0, 3.0]
    assert store.read_text().splitlines() == [rec(keys[0], 1.0), rec(keys[1], 2.0), rec(keys[2], 3.0), rec("other", 7)]


def _sizes(batch):
    return [len(batch)] * len(batch)


def test_long_tasks_run_first_one_per_dask_task():
    saved = []
    short = Group([(f"s{i}", i) for i in range(40)], _sizes, lambda k, r: saved.append(("short", r)))
    long = Group([(f"l{i}", i) for i in range(3)], _sizes, lambda k, r: saved.append(("long", r)), long=True)
    execute([short, long], workers=1, progress=False, batch=5)
    assert [w for w, _ in saved[:3]] == ["long"] * 3, saved
    assert all(r == [1] for w, r in saved if w == "long")
    assert all(r == [5] * 5 for w, r in saved if w == "short")


def _worker_log_level(_):
    import logging

    return [logging.getLogger("distributed.worker").getEffectiveLevel()]


def test_local_workers_log_nothing_a_sweep_would_print():
    # A worker whose scheduler closes under it (Ctrl-C) logged "Failed to communicate
    # with scheduler during heartbeat" with a traceback at ERROR: the workers' own
    # loggers must be quiet (failures reach the client as exceptions).
    import logging

    levels = []
    execute([Group([("k", 0)], _worker_log_level, lambda k, r: levels.extend(r))], workers=1, progress=False)
    assert levels and levels[0] > logging.ERROR, levels
