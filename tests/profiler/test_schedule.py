"""profiler.schedule and profile's step state machine, against PyTorch's."""
import warnings

import pytest

import minitorch_gpu as mt
from minitorch_gpu.profiler import ProfilerAction, ProfilerActivity, profile, schedule

CASES = [dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=2, active=1, repeat=2),
         dict(wait=2, warmup=1, active=3, repeat=1, skip_first=3), dict(wait=1, warmup=1, active=1, skip_first=2,
                                                                        skip_first_wait=1)]


@pytest.mark.parametrize("kw", CASES)
def test_schedule_matches_pytorchs(torch, kw):
    ours, theirs = schedule(**kw), torch.profiler.schedule(**kw)
    assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]


def test_schedule_rejects_what_pytorch_rejects(torch):
    for kw in (dict(wait=-1, warmup=1, active=1), dict(wait=0, warmup=1, active=0)):
        with pytest.raises(AssertionError) as ours:
            schedule(**kw)
        with pytest.raises(AssertionError) as theirs:
            torch.profiler.schedule(**kw)
        assert str(ours.value) == str(theirs.value)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=0, warmup=0, active=1)
    with pytest.raises(AssertionError, match="non-negative"):
        schedule(wait=0, warmup=1, active=1)(-1)


def _run(lib, prof_cls, sched, steps):
    """(step_num at each on_trace_ready, the ProfilerStep ranges and op count of each trace)."""
    ready = []

    def on_ready(p):
        names = [e.name for e in p.events()]
        ready.append((p.step_num, names.count("ProfilerStep*"), names.count("aten::mul")))
    x = lib.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with prof_cls(activities=[lib.profiler.ProfilerActivity.CPU], schedule=sched, on_trace_ready=on_ready) as p:
            for _ in range(steps):
                x * 2
                p.step()
    return ready


@pytest.mark.parametrize("kw", CASES[:3])
def test_steps_save_traces_when_pytorch_does(torch, kw):
    ours = _run(mt, profile, schedule(**kw), 9)
    theirs = _run(torch, torch.profiler.profile, torch.profiler.schedule(**kw), 9)
    assert ours == theirs and ours


def test_without_a_schedule_everything_is_one_trace():
    x = mt.ones(2)
    with profile(activities=[ProfilerActivity.CPU]) as p:
        x * 2
        p.step()
        x * 2
    assert [e.name for e in p.events()] == ["aten::mul", "aten::mul"]
    assert p.current_action is ProfilerAction.RECORD


def test_start_and_stop_by_hand():
    x = mt.ones(2)
    p = profile(activities=[ProfilerActivity.CPU])
    p.start()
    x + 1
    p.stop()
    x + 1
    assert [e.name for e in p.events()] == ["aten::add"]
