"""A schedule hash computed from a lowering done already must be the one a fresh lowering gives
(the compile cache's fingerprint, which records carry and replays check); the tuner's records
carry that hash and the loop features of the code their configuration builds."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import _core, autotvm
from pytvmbridge.autotvm import record
from pytvmbridge.autotvm.features import loop_features
from pytvmbridge.autotvm.measure import MeasureOption, schedule_hash
from pytvmbridge.error import TVMValueError


def _conv(c: int, h: int, o: int, k: int) -> list:
    x = tvm.placeholder((1, c, h, h), name="x")
    w = tvm.placeholder((o, c, k, k), name="w")
    return [x, w, tvm.topi.nn.conv2d(x, w, strides=1, padding=k // 2)]


def _mm(n: int) -> list:
    a = tvm.placeholder((n, n), name="A")
    b = tvm.placeholder((n, n), name="B")
    k = tvm.reduce_axis((0, n), name="k")
    return [a, b, tvm.compute((n, n), lambda i, j: tvm.sum(a[i, k] * b[k, j], axis=k))]


@pytest.mark.parametrize("func,args", [(_conv, (16, 14, 32, 3)), (_mm, (96,))])
def test_hash_from_a_kept_lowering_is_the_fresh_one(func, args):
    task = autotvm.auto_task(func, args)
    rng = random.Random(0)
    hashes = set()
    for _ in range(12):
        c = task.canonical(task.space.sample(rng))
        fresh = schedule_hash(*task.instantiate(c))
        s, a = task.instantiate(c)
        kept = schedule_hash(s, a, "llvm", tvm.lower(s, a, simple_mode=True))
        assert kept == fresh
        hashes.add(fresh)
        # the text itself, not only its hash
        s2, a2 = task.instantiate(c)
        assert _core.build_fingerprint(
            s2, a2, "llvm", "default_function", tvm.lower(s2, a2, name="other")
        ) == _core.build_fingerprint(s, a, "llvm", "default_function")
    assert len(hashes) > 1  # distinct configurations, distinct code: the hash tells them apart


def test_a_lowering_of_other_arguments_is_refused():
    task = autotvm.auto_task(_mm, (32,))
    s, a = task.instantiate(task.space.default())
    f = tvm.lower(s, a)  # three arguments
    with pytest.raises(TVMValueError, match="arguments"):
        _core.build_fingerprint(s, a[:2], "llvm", "default_function", f)


def test_tuner_records_carry_the_fresh_hash_and_features(tmp_path):
    task = autotvm.auto_task(_mm, (64,))
    tuner = autotvm.EvolutionaryTuner(task, seed=0, min_train=4)
    log = tmp_path / "log.json"
    opt = MeasureOption(repeat=1, min_repeat_ms=1, timeout=300)  # no TIMEOUT on a loaded host
    tuner.tune(16, opt, log_file=log, n_parallel=2, progress=False, verify=False)
    recs = list(record.load(log, verified=False))
    assert len(recs) >= 12
    for r in recs:
        assert r["error"] == 0
        assert r["schedule"] == schedule_hash(*task.instantiate(r["config"]))
    keys = {json.dumps(r["config"], sort_keys=True) for r in recs}
    assert len(keys) == len(recs)
    # every record's features are those of the code its configuration lowers to (the
    # workers took them from the tuner)
    for r in recs:
        assert r["features"] == loop_features(*task.instantiate(r["config"]))
    # the best record's code computes the product
    best = min(recs, key=record.record_cost)
    s, args = task.instantiate(best["config"])
    f = tvm.build(s, args)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 64)).astype("float32")
    b = rng.standard_normal((64, 64)).astype("float32")
    c = np.zeros((64, 64), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b.astype("float64"), rtol=1e-4, atol=1e-4)
