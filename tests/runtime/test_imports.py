"""The static side never imports torch: skiplint, its CLI, the runtime package and the plugin."""

import subprocess
import sys


def test_no_torch_on_import():
    code = ("import sys, skiplint, skiplint.cli, skiplint.runtime, skiplint.runtime.cli, "
            "skiplint.runtime.report, skiplint.pytest_plugin; assert 'torch' not in sys.modules, 'torch'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_plugin_fixture(skiplint_verify):
    import os

    from .conftest import FIXTURES

    report = skiplint_verify(os.path.join(FIXTURES, "unet.py") + ":build", checkpoint="never")
    assert report.exit_code == 0
