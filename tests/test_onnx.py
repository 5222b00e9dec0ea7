"""``mt.onnx``: importable; exporting raises a RuntimeError that says what to do."""
import pytest

import minitorch_gpu as mt


def test_import_and_refusal(tmp_path):
    import minitorch_gpu.onnx as onnx
    assert onnx is mt.onnx and onnx.is_in_onnx_export() is False
    model = mt.nn.Linear(2, 3)
    for fn in (onnx.export, onnx.dynamo_export):
        with pytest.raises(RuntimeError, match="ONNX export is not supported by minitorch_gpu") as info:
            fn(model, (mt.zeros(1, 2),), str(tmp_path / "m.onnx"), opset_version=17)
        assert isinstance(info.value, NotImplementedError)
    assert not (tmp_path / "m.onnx").exists()
