"""pytest plugin: the `skiplint_verify` fixture runs `skiplint verify` from a test rig.

    def test_model_pipes(skiplint_verify):
        report = skiplint_verify("mypkg.models:build", input_shape=(8, 3, 32, 32))
        assert report.exit_code == 0, report.to_text()

Imports nothing heavy: torch is imported when the fixture is first called.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest


@pytest.fixture  # type: ignore[untyped-decorator, unused-ignore]
def skiplint_verify() -> Callable[..., Any]:
    """skiplint.runtime.verify(target, **options) -> Report; a run that cannot happen fails the test."""

    def run(target: str, **options: Any) -> Any:
        from skiplint.runtime import verify

        report = verify(target, **options)
        if report.reason is not None:
            pytest.fail(f"skiplint verify {target} could not run: {report.reason}", pytrace=False)
        return report

    return run
