"""`thinwire examples`: the shipped example scenarios and sweeps."""

from __future__ import annotations

import sys

from ..fields import plural as _n
from .common import die


def add(sub) -> None:
    ex = sub.add_parser(
        "examples",
        help="list the example scenarios and sweeps shipped with thinwire, print one, or copy them to edit",
    )
    ex.add_argument("name", nargs="?", help="an example's name (default: all); printed unless --copy or --path")
    ex.add_argument("--copy", metavar="DIR", help="write the example(s) into DIR/scenarios, DIR/sweeps and DIR/scripts")
    ex.add_argument("--force", action="store_true", help="with --copy: replace files that exist")
    ex.add_argument("--path", action="store_true", help="print the installed file's path instead")
    ex.set_defaults(fn=cmd)


def cmd(a) -> int:
    import shutil

    from .. import examples

    try:
        chosen = examples.all_examples() if a.name is None else [examples.get(a.name)]
    except ValueError as e:
        die(str(e))
    if a.copy is not None:
        try:
            written = examples.copy(a.copy, a.name, overwrite=a.force)
        except FileExistsError as e:
            die(f"--copy: {e} (--force replaces it)")
        except OSError as e:
            die(f"--copy {a.copy}: cannot write there ({e.strerror or e})")
        print(
            f"wrote {_n(len(written), 'file')} into {a.copy}/: "
            + ", ".join(str(w.relative_to(a.copy)) for w in written)
        )
        first = next((w for w in written if w.parent.name == "scenarios"), None)
        if first is not None:
            print(f"try: thinwire run {first} --out out --plot")
        return 0
    if a.path:
        for e in chosen:
            print(e.path)
        return 0
    if a.name is not None:
        sys.stdout.write(chosen[0].path.read_text(encoding="utf-8"))
        return 0
    width = max(40, shutil.get_terminal_size((100, 24)).columns)
    name_w = max(len(e.name) for e in chosen)
    for kind in dict.fromkeys(e.kind for e in chosen):
        rows = [e for e in chosen if e.kind == kind]
        print(f"{kind}s:")
        for e in rows:
            room = width - name_w - 4
            d = e.description if len(e.description) <= room else e.description[: room - 3] + "..."
            print(f"  {e.name:<{name_w}}  {d}")
    print(
        "\nthinwire examples NAME prints one; thinwire examples --copy DIR writes them all (scenarios/, sweeps/, scripts/)"
        " into DIR to run and edit; from Python: thinwire.examples.path(NAME)"
    )
    return 0
