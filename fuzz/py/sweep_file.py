"""atheris target: sweep files (`thinwire sweep FILE`). Any input gives a Sweep or a
SweepError (one line); any other exception is a bug. The base scenario is a small
valid one beside the file.
    python fuzz/py/sweep_file.py CORPUS_DIR [SEED_DIR] [-max_total_time=N]"""

import os
import sys
import tempfile

import atheris

with atheris.instrument_imports():
    from thinwire.sweeping import SweepError, load_sweep

DIR = tempfile.mkdtemp(prefix="fuzz-sweep-")
with open(os.path.join(DIR, "base.toml"), "w") as f:
    f.write('[wireless]\nrate = "64kbps"\ndelay = "50ms"\n[[flow]]\napp = "bulk"\nbytes = "10KB"\n')
PATH = os.path.join(DIR, "sweep.toml")


def one(data: bytes) -> None:
    with open(PATH, "wb") as f:
        f.write(data)
    try:
        load_sweep(PATH)
    except SweepError as e:
        assert "\n" not in str(e), str(e)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one)
    atheris.Fuzz()
