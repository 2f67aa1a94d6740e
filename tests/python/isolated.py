"""Runs a snippet in a fresh interpreter, for regressions that used to crash or hang: the test
suite survives them, and a timeout turns a hang into a failure."""

import subprocess
import sys
import textwrap


def run_isolated(code: str, timeout: float = 240) -> str:
    """Runs `code` in a new interpreter; it must exit cleanly and print OK last.

    Example:
        >>> run_isolated("print('OK')").strip()
        'OK'
    """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip().endswith("OK"), result.stdout + result.stderr
    return result.stdout
