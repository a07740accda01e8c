"""The one process pool: every work item is worked once, by whichever process took it; the
children's results are loaded while this process still works, and a child that dies costs
time, never a result."""
from __future__ import annotations

import os
import pickle
import time

import pytest

from catty_ctx.fleet import workers

pytestmark = pytest.mark.skipif(not workers.can_fork(), reason="needs fork and two CPUs")


def _square(n: int) -> tuple[int, int]:
    time.sleep(0.005)  # long enough that both processes take items
    return os.getpid(), n * n


def test_every_item_comes_back_once_with_its_result() -> None:
    got = list(workers.deal(40, _square, 2, pickle.dumps, pickle.loads))
    assert sorted(n for n, _r, _here in got) == list(range(40))
    assert all(r[1] == n * n for n, r, _here in got)
    assert {here for _n, _r, here in got} == {True, False}  # both processes worked


def test_a_childs_results_are_loaded_before_this_process_runs_out_of_work() -> None:
    def interleaved() -> bool:
        order = [here for _n, _r, here in workers.deal(60, _square, 2, pickle.dumps, pickle.loads)]
        last_own = max(i for i, here in enumerate(order) if here)
        return not all(order[:last_own + 1])  # some child result came in between this process's own items

    # (three tries: on a loaded machine a child may not be scheduled at all while the parent works)
    assert interleaved() or interleaved() or interleaved()


def test_a_child_that_dies_half_way_costs_time_not_a_result() -> None:
    parent = os.getpid()

    def dies_after_ten(n: int) -> tuple[int, int]:
        if os.getpid() != parent:
            dies_after_ten.done += 1  # type: ignore[attr-defined]
            if dies_after_ten.done > 10:  # type: ignore[attr-defined]
                os._exit(3)
        return _square(n)

    dies_after_ten.done = 0  # type: ignore[attr-defined]
    got = list(workers.deal(40, dies_after_ten, 2, pickle.dumps, pickle.loads))
    assert sorted(n for n, _r, _here in got) == list(range(40))
    assert all(r[1] == n * n for n, r, _here in got)
