"""A profile-guided build of thinwire: the same simulator, laid out for the runs it does.

    make pgo                                   # build it and install it into .venv
    .venv/bin/python bench/pgo.py              # only the wheel, into target/pgo/wheels/
    .venv/bin/python bench/regress.py --base worktree --head worktree --pgo   # what it gains

Three steps, each in a cargo target folder of its own under `target/pgo/` (so the
ordinary build's cache stays valid):
1. a wheel compiled with `-Cprofile-generate`, installed into a venv of its own;
2. training: that venv runs `--train` below — every example scenario twice, each
   `shared-link-arq` job at three channel points, the `is707-idle-frames` scenario
   with and without idle frames at two fading channels — and the instrumented
   library writes its branch and call counts;
3. `llvm-profdata merge`, and the wheel compiled again with `-Cprofile-use`.

It needs the `llvm-profdata` of the compiler's own LLVM (`rustup component add
llvm-tools`; an older system `llvm-profdata` cannot read a newer compiler's
profiles). About two minutes on the 2-core machine of bench/RESULTS.md.

Profile-guided optimization changes inlining, code layout and branch order, never
arithmetic (Rust does no fast-math): the outputs are byte-identical to the plain
build's (`tests/test_output_hashes.py` passes on it; bench/RESULTS.md, 2026-12-07
fourth session, has the check and the gain). It is opt-in: `make build`, the tests
and CI use the plain build, which needs nothing beyond cargo.
"""

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "target" / "pgo"


def llvm_profdata() -> Path:
    """The `llvm-profdata` shipped for the active Rust toolchain."""
    info = subprocess.run(["rustc", "-vV"], check=True, text=True, capture_output=True).stdout
    host = next(line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("host:"))
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], check=True, text=True, capture_output=True).stdout
    tool = Path(sysroot.strip(), "lib", "rustlib", host, "bin", "llvm-profdata")
    if not tool.is_file():
        print(
            f"pgo: {tool} not found; install it with `rustup component add llvm-tools` "
            "(it must match the compiler's LLVM)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return tool


def cargo_env(target: Path | None, rustflags: str) -> dict:
    """This environment with cargo target folder `target` (None: cargo's default)
    and `rustflags` added to any RUSTFLAGS already set."""
    env = dict(os.environ)
    if target is not None:
        env["CARGO_TARGET_DIR"] = str(target)
    if rustflags:
        env["RUSTFLAGS"] = " ".join(x for x in (os.environ.get("RUSTFLAGS", ""), rustflags) if x)
    return env


def maturin(*args: str, src: Path, env: dict, quiet: bool) -> None:
    tool = Path(sys.executable).parent / "maturin"
    subprocess.run([str(tool), *args], cwd=src, check=True, env=env, stdout=subprocess.DEVNULL if quiet else sys.stderr)


def wheel(src: Path, out: Path, target: Path | None, rustflags: str, quiet: bool) -> Path:
    """Builds `src` into a wheel in `out` (emptied first), in cargo target folder
    `target` (None: cargo's default), with `rustflags` added."""
    shutil.rmtree(out, ignore_errors=True)
    maturin(
        "build",
        "--release",
        "-q",
        "-o",
        str(out),
        "-i",
        sys.executable,
        src=src,
        env=cargo_env(target, rustflags),
        quiet=quiet,
    )
    return next(out.glob("thinwire-*.whl"))


def venv_with(whl: Path, venv: Path) -> Path:
    """A fresh venv holding `whl`, finding the other dependencies in this venv
    (the one running this script); returns its python."""
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(whl)], check=True)
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        text=True,
        capture_output=True,
    ).stdout.strip()
    # A path line: this venv's own .pth files (the editable thinwire) are not read.
    Path(site, "_bench_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return py


def profile(src: Path, quiet: bool) -> Path:
    """Steps 1 and 2: the merged profile of `src` trained on the workload below."""
    tool = llvm_profdata()
    WORK.mkdir(parents=True, exist_ok=True)
    raw = WORK / "raw"
    shutil.rmtree(raw, ignore_errors=True)
    say = (lambda m: None) if quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    say("pgo: building the instrumented wheel ...")
    whl = wheel(src, WORK / "wheels-gen", WORK / "gen", f"-Cprofile-generate={raw}", quiet)
    py = venv_with(whl, WORK / "venv-gen")
    say("pgo: training ...")
    t = time.perf_counter()
    # The source's own training code (`src` may be another commit's export;
    # one from before this file trains on this checkout's workload).
    trainer = src / "bench" / "pgo.py"
    if not trainer.is_file():
        trainer = Path(__file__).resolve()
    subprocess.run([str(py), "-I", str(trainer), "--train"], check=True, cwd=WORK)
    say(f"pgo: trained in {time.perf_counter() - t:.0f} s")
    data = WORK / "thinwire.profdata"
    subprocess.run([str(tool), "merge", "-o", str(data), str(raw)], check=True)
    return data


def pgo_wheel(src: Path, out: Path, quiet: bool = False) -> Path:
    """A profile-guided wheel of the source tree `src` in `out`."""
    data = profile(src, quiet)
    if not quiet:
        print("pgo: building the optimized wheel ...", file=sys.stderr, flush=True)
    return wheel(src, out, WORK / "use", f"-Cprofile-use={data}", quiet)


def train() -> None:
    """The training workload (run inside the instrumented build's venv)."""
    import warnings

    import thinwire
    from thinwire.studies import is707_idle_frames
    from thinwire.studies.shared_link_arq import design

    warnings.simplefilter("ignore")  # the scenarios' own warnings, once per run
    for _ in range(2):
        for path in sorted((ROOT / "scenarios").glob("*.toml")):
            thinwire.run(str(path))
    for job in design.jobs(False):
        for model, flr in (("uniform", 0.015), ("uniform", 0.098), ("two-state", 0.025)):
            thinwire.run_text(job["text"], set={"wireless.channel": design.channel(model, flr)})
    for idle in (0, "unlimited"):
        for pe in (0.1, 0.3):
            ch = {"model": "fading", "pe": pe, "fdt": 0.1}
            thinwire.run_text(is707_idle_frames.scenario("2000s", idle), set={"wireless.channel": ch})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--install", action="store_true", help="install the build into this checkout's .venv")
    ap.add_argument("--train", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.train:
        train()
        return
    t = time.perf_counter()
    if a.install:
        data = profile(ROOT, False)
        print("pgo: building the optimized library into .venv ...", file=sys.stderr, flush=True)
        env = cargo_env(WORK / "use", f"-Cprofile-use={data}")
        maturin("develop", "--release", "-q", src=ROOT, env=env, quiet=False)
        print(f"pgo: installed into .venv in {time.perf_counter() - t:.0f} s (`make build` puts the plain build back)")
    else:
        whl = pgo_wheel(ROOT, WORK / "wheels")
        print(f"pgo: {whl} in {time.perf_counter() - t:.0f} s")


if __name__ == "__main__":
    main()
