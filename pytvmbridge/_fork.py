"""Locks that a forked child gets back unlocked.

``fork()`` copies only the thread that calls it: a lock another thread held at that moment (a
kernel compiling on a warm-up thread when a ``DataLoader`` forks its workers) stays held in the
child forever, and the child's first call that needs it hangs. Objects that guard their slow
paths with ``self._lock = lock_for(self)`` get a fresh lock in the child instead; the C++
runtime's own locks and thread pool are reset by ``pthread_atfork`` handlers.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

_holders: weakref.WeakSet[Any] = weakref.WeakSet()


def lock_for(holder: Any) -> Any:
    """A new lock for ``holder._lock``, replaced by a new unlocked one in a forked child.

    Re-entrant: a kernel's function that calls the same kernel (for another dtype, say) while
    it is being compiled takes the lock again instead of waiting on itself forever.

    Example:
        >>> class Cache:
        ...     def __init__(self):
        ...         self._lock = lock_for(self)
        >>> with Cache()._lock:
        ...     pass
    """
    _holders.add(holder)
    return threading.RLock()


def _unlock_in_child() -> None:
    for holder in list(_holders):
        holder._lock = threading.RLock()


os.register_at_fork(after_in_child=_unlock_in_child)
