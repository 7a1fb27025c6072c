"""``vecgrid import`` (and the REST import jobs) into an existing collection with the dynamic field and a
default value: the files' extra columns land in ``$meta``, a missing default field takes its default.
(Before, the import failed on the absent ``$meta`` column: a quick-form collection could not be imported
into.)"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vecgrid.storage import segment_files
from vecgrid.cluster.datanode.bulk_import import ImportOptions, bulk_import
from tests.proxy_support import dynamic_flat_collection


def test_extra_columns_go_to_meta_and_defaults_fill_in(tmp_path):
    data = dynamic_flat_collection(tmp_path)
    n = 5
    vecs = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
    table = pa.table({"pk": pa.array(range(n), pa.int64()),
                      "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), 4),
                      "age": pa.array(range(n), pa.int32()), "tag": ["t"] * n,
                      "colour": ["red", None, "blue", "red", "green"]})
    src = tmp_path / "rows.parquet"
    pq.write_table(table, src)
    summary = bulk_import(str(tmp_path / "data"), [str(src)], ImportOptions(collection="dyn"))
    assert summary["num_rows"] == n
    store = data.open_store()
    try:
        catalog = data.open_catalog(store)
        rows = pa.concat_tables([segment_files.read_segment(catalog.segment_files_record(s["segment_id"]))
                                 for s in summary["segments"]]).sort_by("pk")
    finally:
        store.close()
    assert [json.loads(m) for m in rows.column("$meta").to_pylist()] == [
        {"colour": "red"}, {}, {"colour": "blue"}, {"colour": "red"}, {"colour": "green"}]
    assert rows.column("score").to_pylist() == [0.5] * n
    assert "colour" not in rows.column_names
