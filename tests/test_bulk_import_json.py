"""``vecgrid import`` (and the REST import jobs) from JSON: ``.jsonl`` lines of row objects, and ``.json`` in
Milvus's bulk-insert forms (``{"rows": [...]}``, a top-level array, or lines).  The same checks as the
other formats: dims, types, NaN, missing fields; keys outside the schema go to ``$meta`` when the
collection has the dynamic field, and are refused when it has not."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from vecgrid import errors
from vecgrid.storage import segment_files
from vecgrid.cluster.datanode.bulk_import import ImportOptions, bulk_import
from vecgrid.cluster.datanode.import_sources import open_sources
from vecgrid.storage.layout import DataDir
from tests.proxy_support import dynamic_flat_collection


def rows_of(n: int, dim: int = 4, seed: int = 0) -> tuple[list[dict], np.ndarray]:
    vecs = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    rows = [{"pk": i, "vec": vecs[i].tolist(), "age": i % 7, "tag": f"t{i % 3}"} for i in range(n)]
    return rows, vecs


def write_lines(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def imported(data_dir, summary) -> pa.Table:
    data = DataDir(str(data_dir))
    store = data.open_store()
    try:
        catalog = data.open_catalog(store)
        return pa.concat_tables([segment_files.read_segment(catalog.segment_files_record(s["segment_id"]))
                                 for s in summary["segments"]]).sort_by("pk")
    finally:
        store.close()


def test_json_lines_create_a_collection_with_exact_vectors(tmp_path):
    rows, vecs = rows_of(300)
    half = write_lines(tmp_path / "a.jsonl", rows[:150])
    rest = write_lines(tmp_path / "b.jsonl", rows[150:])
    sources = open_sources([half, rest])
    assert (sources.layout, sources.num_rows) == ("json", 300)
    summary = bulk_import(str(tmp_path / "data"), [half, rest],
                          ImportOptions(collection="js", primary_key="pk", shards=2, segment_rows=100))
    assert summary["num_rows"] == 300
    fields = {f["name"]: f for f in summary["fields"]}
    assert fields["vec"]["data_type"] == "FloatVector" and fields["vec"]["dim"] == 4
    assert (fields["age"]["data_type"], fields["tag"]["data_type"]) == ("Int64", "VarChar")
    table = imported(tmp_path / "data", summary)
    assert table.column("pk").to_pylist() == list(range(300))
    got = np.asarray(table.column("vec").combine_chunks().flatten().to_numpy()).reshape(300, 4)
    np.testing.assert_array_equal(got, vecs)
    assert table.column("tag").to_pylist()[:4] == ["t0", "t1", "t2", "t0"]


@pytest.mark.parametrize("form", ["rows", "array", "lines"])
def test_milvus_json_forms(tmp_path, form):
    rows, vecs = rows_of(20)
    path = tmp_path / "rows.json"
    if form == "rows":
        path.write_text(json.dumps({"rows": rows}, indent=2))
    elif form == "array":
        path.write_text(json.dumps(rows, indent=1))
    else:
        write_lines(path, rows)
    summary = bulk_import(str(tmp_path / "data"), [str(path)], ImportOptions(collection="m", primary_key="pk"))
    table = imported(tmp_path / "data", summary)
    assert table.num_rows == 20
    got = np.asarray(table.column("vec").combine_chunks().flatten().to_numpy()).reshape(20, 4)
    np.testing.assert_array_equal(got, vecs)


def test_keys_outside_the_schema_go_to_meta(tmp_path):
    data = dynamic_flat_collection(tmp_path)
    rows, _ = rows_of(5)
    for r in rows:
        r["age"] = int(r["age"])
    rows[0]["colour"] = "red"
    rows[3]["colour"] = "blue"
    rows[3]["size"] = {"w": 2}
    summary = bulk_import(str(data.path), [write_lines(tmp_path / "d.jsonl", rows)],
                          ImportOptions(collection="dyn"))
    table = imported(data.path, summary)
    assert [json.loads(m) for m in table.column("$meta").to_pylist()] == [
        {"colour": "red"}, {}, {}, {"colour": "blue", "size": {"w": 2}}, {}]
    assert "colour" not in table.column_names


def imports_nothing(tmp_path, lines: list[str], match: str, **opts) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    with pytest.raises(errors.ParameterInvalid, match=match):
        bulk_import(str(tmp_path / "data"), [str(path)], ImportOptions(collection="bad", primary_key="pk", **opts))
    data = DataDir(str(tmp_path / "data"))
    store = data.open_store()
    try:
        assert not data.open_catalog(store).has_collection("default", "bad")
    finally:
        store.close()


def test_bad_rows_are_refused_and_publish_nothing(tmp_path):
    ok = json.dumps({"pk": 1, "vec": [1.0, 2.0, 3.0], "age": 1})
    imports_nothing(tmp_path, [ok, json.dumps({"pk": 2, "vec": [1.0, 2.0], "age": 2})], "dim|dimension")
    imports_nothing(tmp_path, [ok, json.dumps({"pk": 2, "age": 2})], "vec")
    imports_nothing(tmp_path, [ok, '{"pk": 2, "vec": [1.0, NaN, 3.0], "age": 2}'], "bad.jsonl|NaN|nan")
    imports_nothing(tmp_path, [ok, json.dumps({"pk": 2, "vec": [1.0, 2.0, 3.0], "age": "old"})], "age|bad.jsonl")
    imports_nothing(tmp_path, [ok, '{"pk": 2, "vec": [1.0, 2.0'], "bad.jsonl")
    imports_nothing(tmp_path, [ok, "[1, 2, 3]"], "bad.jsonl")
    imports_nothing(tmp_path, [], "no rows|empty")


def test_json_with_other_formats_is_refused(tmp_path):
    np.save(tmp_path / "v.npy", np.ones((2, 4), np.float32))
    jsonl = write_lines(tmp_path / "a.jsonl", rows_of(2)[0])
    with pytest.raises(errors.ParameterInvalid, match="JSON"):
        open_sources([jsonl, str(tmp_path / "v.npy")])
