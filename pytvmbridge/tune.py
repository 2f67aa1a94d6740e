"""``pytvmbridge.tune``: another name for :mod:`pytvmbridge.autotvm` (the issue's spelling).

Example:
    >>> import pytvmbridge.tune as tune
    >>> from pytvmbridge import autotvm
    >>> tune.plot is autotvm.plot and tune.apply_history_best is autotvm.apply_history_best
    True
"""

from .autotvm import *  # noqa: F403
from .autotvm import __all__  # noqa: F401
