"""thinwire: a laboratory for TCP over slow, lossy wireless links protected by
link-layer ARQ.

    >>> import thinwire
    >>> r = thinwire.run("scenarios/shared-link-sr.toml", seed=2, set={"flow.0.bytes": "1MB"})
    >>> r.flows            # polars DataFrame, one row per flow
    >>> r.trace            # polars DataFrame of trace events (layers chosen with trace=)
"""

__all__ = ["run", "check", "RunResult", "ScenarioError", "load_scenario_text"]
__version__ = "0.1.0"


def __getattr__(name: str):
    # The API is imported on first use, so that commands which do not need it
    # (`thinwire analyze`, `thinwire version`) start faster.
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'thinwire' has no attribute {name!r}")
