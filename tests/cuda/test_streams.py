"""mt.cuda Stream and Event."""
import pytest

import minitorch_gpu as mt


def test_events_time_work_and_streams_order_it(device):
    if device == "cpu":
        pytest.skip("CUDA streams")
    start, end = mt.cuda.Event(enable_timing=True), mt.cuda.Event(enable_timing=True)
    x = mt.randn(64, 64, device=device)
    start.record()
    y = x @ x
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0.0
    s = mt.cuda.Stream()
    s.wait_stream(mt.cuda.current_stream())
    with mt.cuda.stream(s):
        assert mt.cuda.current_stream() == s
        z = y * 2
    assert mt.cuda.current_stream() == mt.cuda.default_stream()
    mt.cuda.current_stream().wait_stream(s)
    ev = s.record_event()
    ev.wait()
    s.synchronize()
    assert s.query() and ev.query()
    assert z.cpu().numpy() == pytest.approx((x @ x * 2).cpu().numpy(), rel=1e-5)
    with mt.cuda.stream(None):
        pass


def test_event_errors(device):
    if device == "cpu":
        pytest.skip("CUDA events")
    a, b = mt.cuda.Event(), mt.cuda.Event()
    a.record()
    b.record()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        a.elapsed_time(b)
    c, d = mt.cuda.Event(enable_timing=True), mt.cuda.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="must be recorded"):
        c.elapsed_time(d)
