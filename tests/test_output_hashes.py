"""Outputs of every example scenario (two seeds, every trace layer, both pcaps) are
byte-identical to the recorded ones: a restructuring must not change what a user
sees. A deliberate change rewrites tests/data/golden/output_hashes.json with
`python tests/tools/output_hashes.py --write` and says why in the commit."""

import json

from tools.output_hashes import GOLDEN, compute


def test_outputs_match_the_recorded_hashes():
    want = json.loads(GOLDEN.read_text())
    got = compute()
    assert sorted(got) == sorted(want), "scenarios/ changed: rewrite the golden file"
    diff = {k: {f: (want[k][f], got[k][f]) for f in got[k] if got[k][f] != want[k].get(f)} for k in got}
    diff = {k: v for k, v in diff.items() if v}
    assert not diff, f"outputs changed (scenario@seed: {{output: (recorded, now)}}): {diff}"
