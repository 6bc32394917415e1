"""The example scenarios and sweeps that ship inside the package.

The repository's top-level `scenarios/` and `sweeps/` folders are links to these
files, so a clone and an installed wheel read the same examples.

    >>> from thinwire import examples
    >>> examples.names()                          # ['bulk-10mbps-raw', ...]
    >>> thinwire.run(examples.path("shared-link-sr"), seed=2)
    >>> examples.copy("my-examples")              # scenarios/ and sweeps/ to edit

Scripts (`scripts/*.py`) use the Python API on the installed examples. From the shell: `thinwire examples`, `thinwire examples NAME`, `thinwire examples
--copy DIR`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = ["Example", "all_examples", "names", "path", "copy"]

# Kinds in listing order: (folder inside the package, what it is).
_KINDS = (("scenarios", "scenario", ".toml"), ("sweeps", "sweep", ".toml"), ("scripts", "script", ".py"))


@dataclass(frozen=True)
class Example:
    name: str  # the file's stem, e.g. "shared-link-sr"
    kind: str  # "scenario", "sweep" or "script" (Python, using the API)
    path: Path  # where the installed file is (read it, copy it, pass it to run)
    description: str  # the file's leading comment, as one line

    @property
    def relative(self) -> str:
        """Its path under a copy's folder, e.g. "scenarios/shared-link-sr.toml"
        (a sweep names its scenario relative to itself: ../scenarios/...)."""
        return f"{self.path.parent.name}/{self.path.name}"


def _root() -> Path:
    # The package is installed as files (a wheel or an editable checkout), never
    # zipped, so the resources are real paths the core can open.
    return Path(str(resources.files(__name__)))


def _description(p: Path) -> str:
    lines = []
    for line in p.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(x for x in lines if x)


def all_examples() -> list[Example]:
    """Every shipped example: scenarios, sweeps, then scripts, each by name."""
    out = []
    for folder, kind, suffix in _KINDS:
        for p in sorted((_root() / folder).glob(f"*{suffix}")):
            out.append(Example(p.stem, kind, p, _description(p)))
    return out


def names() -> list[str]:
    return [e.name for e in all_examples()]


def get(name: str) -> Example:
    """The example called NAME (a file's stem; the suffix and a folder prefix such
    as "scenarios/" are accepted). ValueError naming the available ones if none."""
    stem = Path(name).name
    stem = stem.rsplit(".", 1)[0] if stem.endswith((".toml", ".py")) else stem
    for e in all_examples():
        if e.name == stem:
            return e
    raise ValueError(f"{name!r} is not an example; available: {', '.join(names())}")


def path(name: str) -> Path:
    """The installed file of example NAME, e.g. path("gprs-download")."""
    return get(name).path


def copy(dest: str | Path, name: str | None = None, overwrite: bool = False) -> list[Path]:
    """Copy every example (or only NAME) into DEST as DEST/scenarios/*.toml,
    DEST/sweeps/*.toml and DEST/scripts/*.py (the layout the sweeps' relative paths
    expect). A sweep is
    copied with the scenario it names. Refuses (FileExistsError, nothing written)
    to replace a file unless `overwrite`. Returns the files written."""
    chosen = all_examples() if name is None else [get(name)]
    if name is not None and chosen[0].kind == "sweep":
        chosen += [e for e in all_examples() if e.kind == "scenario" and _names_scenario(chosen[0], e)]
    dest = Path(dest)
    targets = [(e.path, dest / e.relative) for e in chosen]
    if not overwrite:
        existing = [t for _, t in targets if t.exists()]
        if existing:
            raise FileExistsError(
                f"{existing[0]} exists{f' (and {len(existing) - 1} more)' if len(existing) > 1 else ''}; "
                "choose another folder or overwrite"
            )
    written = []
    for src, t in targets:
        t.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, t)
        written.append(t)
    return written


def _names_scenario(sweep: Example, scenario: Example) -> bool:
    import tomllib

    with open(sweep.path, "rb") as f:
        named = tomllib.load(f).get("scenario", "")
    return Path(named).name == scenario.path.name
