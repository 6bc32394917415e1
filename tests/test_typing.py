"""The Rust core's type stubs (python/thinwire/_core.pyi) match the module."""

import importlib.util
import subprocess
import sys

import pytest


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy not installed (pip install mypy)")
def test_core_stubs_match_the_module():
    p = subprocess.run([sys.executable, "-m", "mypy.stubtest", "thinwire._core"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_result_fields_describe_every_reported_key():
    import thinwire
    from thinwire.fields import fields, metrics

    r = thinwire.run(
        '[wireless]\nrate = "64kbps"\ndelay = "50ms"\n[[flow]]\napp = "bulk"\nbytes = "10KB"\n'
        '[[flow]]\napp = "media"\n[proxy]\n',
        set={"stop": "20s"},
    ).raw
    for section, got in (("flow", r["flows"][0]), ("link", r["link"]["down"]), ("proxy", r["proxy"])):
        shown = {f["name"] for f in fields(section) if f["kind"] != "hidden"}
        assert set(got) == shown, section
    assert "throughput_bps" in metrics("flow") and "flr" in metrics("link")
