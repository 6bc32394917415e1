"""atheris target: the 'ss -tin' and tcp_probe readers (`thinwire plot --sender-state`).
Any input gives a table or SenderStateError (one line); any other exception is a bug.
    python fuzz/py/sender_state.py CORPUS_DIR [SEED_DIR] [-max_total_time=N]"""

import os
import sys
import tempfile

import atheris

with atheris.instrument_imports():
    from thinwire.analysis.sender_state import SenderStateError, read_ss, read_tcp_probe, sniff

PATH = os.path.join(tempfile.mkdtemp(prefix="fuzz-ss-"), "state.txt")


def one(data: bytes) -> None:
    with open(PATH, "wb") as f:
        f.write(data)
    for fn in (sniff, read_ss, read_tcp_probe):
        try:
            fn(PATH)
        except SenderStateError as e:
            assert "\n" not in str(e), str(e)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one)
    atheris.Fuzz()
