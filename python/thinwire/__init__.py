"""thinwire: a laboratory for TCP over slow, lossy wireless links protected by
link-layer ARQ.

    >>> import thinwire
    >>> r = thinwire.run("scenarios/shared-link-sr.toml", seed=2, set={"flow.0.bytes": "1MB"})
    >>> r.flows            # polars DataFrame, one row per flow
    >>> r.trace            # polars DataFrame of trace events (layers chosen with trace=)
"""
from .api import RunResult, ScenarioError, run, check, load_scenario_text

__all__ = ["run", "check", "RunResult", "ScenarioError", "load_scenario_text"]
__version__ = "0.1.0"
