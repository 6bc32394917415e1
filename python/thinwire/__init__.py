"""thinwire: a laboratory for TCP over slow, lossy wireless links protected by
link-layer ARQ.

    >>> import thinwire
    >>> r = thinwire.run(thinwire.examples.path("shared-link-sr"), seed=2, set={"flow.0.bytes": "1MB"})
    >>> r.flows            # polars DataFrame, one row per flow
    >>> r.trace            # polars DataFrame of trace events (layers chosen with trace=)
    >>> runs, summary = thinwire.sweep(thinwire.examples.path("shared-link-sr"),
    ...     axes={"wireless.channel.p": [0.01, 0.05]}, replications=5)
"""

# Nothing is imported here (not even importlib, nor `from __future__ import
# annotations`, which imports the standard library's `__future__.py` at run time):
# a Ctrl-C while the command starts can land in this module's import, and an
# import in progress would show as a traceback through the standard library
# (tests/test_reliability.py; seen in CI at 20 ms inside `__future__`).
TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (start-up time)

__all__ = [
    "run",
    "run_text",
    "check",
    "sweep",
    "RunResult",
    "Summary",
    "SweepResult",
    "ScenarioError",
    "ScenarioWarning",
    "load_scenario_text",
    "examples",
    "fields",
]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from typing import Any

    # What type checkers see: the same names, resolved statically (at run time they
    # are imported on first use, below).
    from . import examples as examples
    from . import fields as fields
    from .api import RunResult as RunResult
    from .api import ScenarioError as ScenarioError
    from .api import ScenarioWarning as ScenarioWarning
    from .api import Summary as Summary
    from .api import check as check
    from .api import load_scenario_text as load_scenario_text
    from .api import run as run
    from .api import run_text as run_text
    from .sweeping import SweepResult as SweepResult
    from .sweeping import sweep as sweep

# name -> module that defines it. Imported on first use, so that commands which do
# not need them (`thinwire analyze`, `thinwire --version`) start faster.
_LAZY = {
    "run": ".api",
    "run_text": ".api",
    "check": ".api",
    "RunResult": ".api",
    "Summary": ".api",
    "ScenarioError": ".api",
    "ScenarioWarning": ".api",
    "load_scenario_text": ".api",
    "sweep": ".sweeping",
    "SweepResult": ".sweeping",
}
_SUBMODULES = ("examples", "fields")


def __getattr__(name: str) -> "Any":
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'thinwire' has no attribute {name!r}")
    # Imported once: later look-ups (thinwire.run in a sweep's loop) find it here.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
