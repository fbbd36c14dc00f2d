"""Model files (issue 11, item 14): size and shapes checked before anything is unpacked, finite weights and
metadata required, saved atomically."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from slurm_plugin.rank.dqn import DqnModel, ModelError, load_model, save_model
from slurm_plugin.rank.dqn.model import MAX_ARRAY_BYTES, MAX_MODEL_BYTES


def with_array(model: DqnModel, layer: int, kind: str, value) -> DqnModel:
    ws = [w.copy() for w in model.weights]
    bs = [b.copy() for b in model.biases]
    (ws if kind == "w" else bs)[layer].flat[3 % (ws if kind == "w" else bs)[layer].size] = value
    return DqnModel(ws, bs, dict(model.meta))


def write_npz(path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def npy_header(shape, dtype="<f4") -> bytes:
    import io
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()


@pytest.mark.parametrize("kind,layer,value", [("w", 0, np.nan), ("w", 2, np.inf), ("b", 1, np.nan),
                                              ("b", 2, -np.inf)])
def test_non_finite_weights_are_refused_on_load_and_save(tmp_path, kind, layer, value):
    good = save_model(DqnModel.init(seed=1), tmp_path / "m.npz")
    before = good.read_bytes()
    bad = with_array(DqnModel.init(seed=1), layer, kind, value)
    with pytest.raises(ModelError, match=rf"layer {layer} has 1 non-finite {'weights' if kind == 'w' else 'biases'}"):
        save_model(bad, good)
    assert good.read_bytes() == before  # the good model is still there, whole
    # the same model written by other means is refused on load
    arrays = {f"w{i}": w for i, w in enumerate(bad.weights)} | {f"b{i}": b for i, b in enumerate(bad.biases)}
    np.savez(tmp_path / "bad.npz", meta=np.array(__import__("json").dumps(
        {"format": "hetsched-dqn/2", "features": bad.meta["features"], "bands": 8})), **arrays)
    with pytest.raises(ModelError, match="non-finite"):
        load_model(tmp_path / "bad.npz")


@pytest.mark.parametrize("key,value", [("margin", float("nan")), ("backlog_gate", float("inf")), ("margin", "x")])
def test_non_finite_metadata_is_refused(tmp_path, key, value):
    model = DqnModel.init(seed=2)
    model.meta[key] = value
    with pytest.raises(ModelError, match=f"meta {key} is"):
        save_model(model, tmp_path / "m.npz")


def test_an_array_whose_header_claims_gigabytes_is_refused_before_unpacking(tmp_path):
    path = tmp_path / "bomb.npz"
    write_npz(path, {"meta.npy": npy_header((), "<U10") + b"\0" * 40,
                     "w0.npy": npy_header((12, 100_000_000)) + b"\0" * 1024})
    with pytest.raises(ModelError, match=r"w0.npy: float32 array of shape \(12, 100000000\) \(4,800,000,000 bytes"):
        load_model(path)


def test_a_member_that_unpacks_beyond_the_bound_is_refused(tmp_path):
    path = tmp_path / "zeros.npz"
    n = MAX_ARRAY_BYTES // 4 + 1024
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf, zf.open("w0.npy", "w", force_zip64=True) as fh:
        fh.write(npy_header((n,)))
        block = bytes(1 << 20)
        for _ in range(n * 4 // len(block) + 1):
            fh.write(block)
    assert path.stat().st_size < 1 << 20  # small on disk, 64 MiB unpacked
    with pytest.raises(ModelError, match="want float or text arrays of at most"):
        load_model(path)


def test_object_arrays_and_oversized_files_are_refused(tmp_path):
    path = tmp_path / "obj.npz"
    write_npz(path, {"w0.npy": npy_header((2,), "|O") + b"\0" * 16})
    with pytest.raises(ModelError, match="object array"):
        load_model(path)
    big = tmp_path / "big.npz"
    with open(big, "wb") as fh:
        fh.truncate(MAX_MODEL_BYTES + 1)
    with pytest.raises(ModelError, match="a model is at most"):
        load_model(big)


@pytest.mark.parametrize("hidden,out", [((32, 7), "7 outputs, want 8 bands")])
def test_wrong_shapes_are_refused(tmp_path, hidden, out):
    model = DqnModel.init(hidden=hidden[:-1], seed=3)
    model.weights[-1] = model.weights[-1][:, :7]
    model.biases[-1] = model.biases[-1][:7]
    with pytest.raises(ModelError, match=out):
        save_model(model, tmp_path / "m.npz")


def test_save_is_atomic_and_round_trips(tmp_path):
    path = save_model(DqnModel.init(seed=5), tmp_path / "sub" / "m.npz")
    assert [p.name for p in path.parent.iterdir()] == ["m.npz"]  # no temporary file left behind
    m = load_model(path)
    assert np.array_equal(m.weights[0], DqnModel.init(seed=5).weights[0])
