"""Tests for vecgrid.storage.segment_files: layout, round trips, integrity checks, crash safety."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vecgrid.storage import segment_files as sf
from vecgrid.storage.segment_files import (
    CorruptSegmentError,
    SegmentFiles,
    SegmentStorageError,
    StorageBackendUnavailableError,
    delete_segment,
    get_file,
    index_path,
    iter_segment_batches,
    put_file,
    read_deltalog,
    read_segment,
    sweep_temp_files,
    verify_file,
    write_deltalog,
    write_segment,
)
from tests.storage_support import DIM, all_types_table

pytestmark = pytest.mark.timeout(60)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def table() -> pa.Table:
    return all_types_table(1000)


def test_round_trip_every_column_type(tmp_path, table):
    files = write_segment(tmp_path, 449123, 449124, 449125, table, row_group_size=300)
    assert files.num_rows == 1000
    assert files.data.path == "segments/449123/449124/449125/data.parquet"
    assert os.path.getsize(tmp_path / files.data.path) == files.data.size
    assert files.data.checksum.startswith("crc32:")
    back = read_segment(files)
    assert back.schema.equals(table.schema)
    assert back.equals(table)
    # The file itself is plain Parquet: any reader sees the vector as a list of float32.
    pf = pq.ParquetFile(tmp_path / files.data.path)
    assert pf.metadata.num_row_groups == 4
    stored = pf.schema_arrow.field("vector").type
    assert pa.types.is_fixed_size_list(stored) and stored.value_type == pa.float32() and stored.list_size == DIM
    assert pq.read_table(tmp_path / files.data.path).column("vector").combine_chunks().flatten().equals(
        table.column("vector").combine_chunks().flatten()
    )


def test_nullable_vectors_and_sha256(tmp_path):
    vec = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(3 * 4, dtype=np.float32)), 4)
    vec = pa.array([vec[0].as_py(), None, vec[2].as_py()], type=pa.list_(pa.float32(), 4))
    t = pa.table({"pk": [1, 2, 3], "v": vec})
    files = write_segment(tmp_path, 1, 2, 3, t, checksum="sha256")
    assert files.data.checksum.startswith("sha256:") and len(files.data.checksum) == 7 + 64
    assert read_segment(files).equals(t)


def test_column_projection_and_batches(tmp_path, table):
    files = write_segment(tmp_path, 1, 2, 3, table, row_group_size=128)
    sub = read_segment(files, columns=["vector", "pk"])
    assert sub.schema.names == ["vector", "pk"]
    assert sub.equals(table.select(["vector", "pk"]))
    batches = list(iter_segment_batches(files, batch_size=100))
    assert all(b.num_rows <= 128 for b in batches)
    assert pa.Table.from_batches(batches).equals(table)
    assert pa.Table.from_batches(list(iter_segment_batches(files, columns=["name"]))).equals(table.select(["name"]))
    with pytest.raises(KeyError):
        read_segment(files, columns=["nope"])


def test_segment_files_record_round_trips(tmp_path, table):
    files = write_segment(tmp_path, 1, 2, 3, table, deltalog=([1, 2], [10, 11]))
    files = files.with_index(101, put_file(tmp_path, files.index_path(101), b"faiss-bytes"))
    again = SegmentFiles.from_json(files.to_json())
    assert again == files
    assert again.index_path(101) == index_path(1, 2, 3, 101) == "segments/1/2/3/index_101.bin"
    assert [f.path for f in again.files()] == [
        "segments/1/2/3/data.parquet",
        "segments/1/2/3/deltalog.parquet",
        "segments/1/2/3/index_101.bin",
    ]
    assert again.total_size == sum(os.path.getsize(tmp_path / f.path) for f in again.files())


# ---------------------------------------------------------------------------------------------
# integrity


def damaged_copies(files: SegmentFiles, path: str):
    """Yield (label, mutate) pairs that damage a file in place."""
    size = os.path.getsize(path)

    def truncate(n):
        def run():
            with open(path, "r+b") as f:
                f.truncate(n)

        return run

    def flip(pos):
        def run():
            with open(path, "r+b") as f:
                f.seek(pos)
                b = f.read(1)
                f.seek(pos)
                f.write(bytes([b[0] ^ 0x01]))

        return run

    def append():
        with open(path, "ab") as f:
            f.write(b"\x00")

    yield "truncate-1", truncate(size - 1)
    yield "truncate-half", truncate(size // 2)
    yield "truncate-0", truncate(0)
    yield "flip-first", flip(0)
    yield "flip-middle", flip(size // 2)
    yield "flip-footer", flip(size - 10)
    yield "grow", append
    yield "delete", lambda: os.unlink(path)


def test_damaged_data_file_is_rejected(tmp_path, table):
    good = write_segment(tmp_path / "good", 1, 2, 3, table, row_group_size=400)
    src = tmp_path / "good" / good.data.path
    original = src.read_bytes()
    for label, damage in damaged_copies(good, str(src)):
        damage()
        with pytest.raises(CorruptSegmentError):
            read_segment(good)
        with pytest.raises(CorruptSegmentError):
            iter_segment_batches(good)  # verified before the first batch
        with pytest.raises(CorruptSegmentError):
            verify_file(good.root, good.data)
        src.write_bytes(original)
        assert read_segment(good).num_rows == 1000, label


def test_damage_after_verification_is_caught_while_streaming(tmp_path, table):
    files = write_segment(tmp_path, 1, 2, 3, table, row_group_size=200)
    batches = iter_segment_batches(files, columns=["vector"], batch_size=200)
    path = tmp_path / files.data.path
    meta = pq.ParquetFile(path).metadata
    # Flip a byte inside a data page of row group 3's vector column; the page CRC catches it.
    paths = [meta.row_group(3).column(i).path_in_schema for i in range(meta.num_columns)]
    chunk = meta.row_group(3).column(paths.index("vector.list.element"))
    pos = chunk.data_page_offset + chunk.total_compressed_size // 2
    with open(path, "r+b") as f:
        f.seek(pos)
        b = f.read(1)
        f.seek(pos)
        f.write(bytes([b[0] ^ 0xFF]))
    with pytest.raises(CorruptSegmentError):
        for _ in batches:
            pass


def test_catalog_record_must_match(tmp_path, table):
    files = write_segment(tmp_path, 1, 2, 3, table)
    with pytest.raises(CorruptSegmentError, match="checksum"):
        read_segment(dataclasses.replace(files, data=dataclasses.replace(files.data, checksum="crc32:00000000")))
    with pytest.raises(CorruptSegmentError, match="rows"):
        read_segment(dataclasses.replace(files, num_rows=999))
    with pytest.raises(CorruptSegmentError, match="missing"):
        elsewhere = dataclasses.replace(files.data, path="segments/1/2/4/data.parquet")
        read_segment(dataclasses.replace(files, segment_id=4, data=elsewhere))


# ---------------------------------------------------------------------------------------------
# crash safety


def test_failure_mid_write_leaves_nothing(tmp_path, table, monkeypatch):
    real = pq.ParquetWriter.write_table

    def write_half_then_die(self, t, row_group_size=None):
        real(self, t.slice(0, t.num_rows // 2), row_group_size=row_group_size)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", write_half_then_die)
    with pytest.raises(OSError):
        write_segment(tmp_path, 1, 2, 3, table)
    seg = tmp_path / "segments/1/2/3"
    assert list(seg.iterdir()) == []  # neither data.parquet nor a temporary file


_CHILD_SEGMENTS = """
import os, sys, threading
sys.path.insert(0, {repo!r})
from tests.storage_support import all_types_table
from vecgrid.storage import backend, segment_files as sf

table = all_types_table(20000, seed=5)
print(sf.write_segment({root!r}, 1, 2, 1, table, row_group_size=2000).to_json(), flush=True)

# The second write stops for good at {point!r} and says so: the parent kills it exactly there.
def stop_here():
    print("at {point}", flush=True)
    threading.Event().wait()

if {point!r} == "mid-data":   # some row groups through the writer, the temporary file incomplete
    write = backend._CountingHashWriter.write
    def write_then_stop(self, b):
        n = write(self, b)
        if self.size > 256 << 10:
            stop_here()
        return n
    backend._CountingHashWriter.write = write_then_stop
else:
    replace = os.replace
    def replace_around_stop(src, dst):
        if {point!r} == "before-publish":   # the temporary file complete and fsynced, not renamed
            stop_here()
        replace(src, dst)
        stop_here()                          # after-publish: renamed, the directory not yet synced
    os.replace = replace_around_stop
sf.write_segment({root!r}, 1, 2, 2, table, row_group_size=2000)
print("finished", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("point", ["mid-data", "before-publish", "after-publish"])
def test_kill_9_mid_write_leaves_nothing_a_reader_accepts(tmp_path, point):
    """kill -9 at a chosen point of a segment write (the child stops there and says so): what the writer
    returned before is intact, and what the interrupted write left is either absent or complete; a
    reader given the record a finished write would have produced never gets partial data, and
    temporary files never carry the published name and are swept."""
    root = str(tmp_path / "root")
    table = all_types_table(20000, seed=5)
    script = _CHILD_SEGMENTS.format(repo=REPO, root=root, point=point)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        published = SegmentFiles.from_json(proc.stdout.readline())
        assert proc.stdout.readline().strip() == f"at {point}"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)
    assert read_segment(published).equals(table)   # everything the writer returned is intact

    seg_dir = os.path.join(root, "segments/1/2/2")
    names = sorted(os.listdir(seg_dir))
    reference = write_segment(tmp_path / "ref", 1, 2, 2, table, row_group_size=2000)
    would_be = dataclasses.replace(reference, root=root)   # what a finished write would have recorded
    temps = [f"segments/1/2/2/{n}" for n in names if n.endswith(".tmp")]
    if point == "after-publish":
        assert names == ["data.parquet"]
        assert read_segment(would_be).equals(table)
    else:
        assert len(names) == 1 and names[0].startswith(".data.parquet.") and names[0].endswith(".tmp"), names
        with pytest.raises(CorruptSegmentError):
            read_segment(would_be)
    assert sweep_temp_files(root, older_than_s=0) == temps
    assert not any(n.endswith(".tmp") for _, _, ns in os.walk(root) for n in ns)


# ---------------------------------------------------------------------------------------------
# delete logs, generic files, backends


@pytest.mark.parametrize("pks", [np.array([4, 8, 15], dtype=np.int64), ["a", "b", "c"]])
def test_deltalog(tmp_path, table, pks):
    files = write_segment(tmp_path, 1, 2, 3, table)
    assert files.deltalog is None
    empty = read_deltalog(files)
    assert empty.num_rows == 0 and empty.schema.names == ["pk", "ts"]
    files = write_deltalog(files, pks, np.array([100, 101, 102], dtype=np.uint64))
    assert files.deltalog.path == "segments/1/2/3/deltalog.parquet"
    dl = read_deltalog(files)
    assert dl.column("pk").to_pylist() == list(pks)
    assert dl.column("ts").to_pylist() == [100, 101, 102]
    with pytest.raises(SegmentStorageError, match="already has"):
        write_deltalog(files, pks, [1, 2, 3])
    files2 = write_deltalog(files, [], [], replace=True)
    assert read_deltalog(files2).num_rows == 0
    with pytest.raises(CorruptSegmentError):
        read_deltalog(files)  # the old record no longer matches the replaced file
    with pytest.raises(ValueError):
        write_deltalog(files2, [1, 2], [1], replace=True)


def test_put_get_file(tmp_path):
    data = os.urandom(100_000)
    info = put_file(tmp_path, index_path(1, 2, 3, 101), data)
    assert info.size == len(data)
    assert bytes(get_file(tmp_path, info)) == data
    assert np.frombuffer(get_file(tmp_path, info), dtype=np.uint8).size == len(data)
    verify_file(tmp_path, info)
    with open(tmp_path / info.path, "r+b") as f:
        f.seek(500)
        f.write(b"\x00\x01\x02")
    with pytest.raises(CorruptSegmentError):
        get_file(tmp_path, info)
    with pytest.raises(ValueError):
        put_file(tmp_path, "../outside.bin", b"x")
    sha = put_file(tmp_path, "segments/1/2/3/extra.bin", b"abc", checksum="sha256")
    assert sha.checksum == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_fsspec_root(tmp_path, table):
    pytest.importorskip("fsspec")
    root = f"memory://vecgrid-test-{os.getpid()}"
    files = write_segment(root, 1, 2, 3, table, deltalog=([1], [2]))
    assert files.root == root
    assert read_segment(files).equals(table)
    assert pa.Table.from_batches(list(iter_segment_batches(files))).equals(table)
    assert read_deltalog(files).num_rows == 1
    info = put_file(root, files.index_path(7), b"idx")
    assert bytes(get_file(root, info)) == b"idx"
    import fsspec

    fs = fsspec.filesystem("memory")
    with fs.open(f"/vecgrid-test-{os.getpid()}/{files.data.path}", "wb") as f:
        f.write(b"garbage")
    with pytest.raises(CorruptSegmentError):
        read_segment(files)
    delete_segment(root, 1, 2, 3)
    with pytest.raises(CorruptSegmentError, match="missing"):
        read_segment(files)


def test_file_url_root(tmp_path, table):
    files = write_segment(f"file://{tmp_path}", 1, 2, 3, table)
    assert (tmp_path / files.data.path).exists()
    assert read_segment(files).equals(table)


def test_s3_without_s3fs_is_a_clear_error():
    try:
        import s3fs  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("s3fs is installed")
    with pytest.raises(StorageBackendUnavailableError, match="s3"):
        write_segment("s3://bucket/prefix", 1, 2, 3, pa.table({"a": [1]}))


def test_delete_segment(tmp_path, table):
    files = write_segment(tmp_path, 1, 2, 3, table)
    delete_segment(tmp_path, 1, 2, 3)
    assert not (tmp_path / files.dir).exists()
    delete_segment(tmp_path, 1, 2, 3)  # idempotent


def test_module_layout_documented():
    assert "segments/<collection_id>/<partition_id>/<segment_id>/" in sf.__doc__


def test_removing_a_file_whose_directory_another_remover_took_meanwhile(tmp_path, monkeypatch):
    """Two collectors sweep the same root (a cluster's DataCoord and a tool's): between this one's
    unlink and its directory fsync the other removed the now empty segment directory.  The file is
    gone, which is what was asked: no FileNotFoundError for the directory."""
    from vecgrid.storage import backend

    seg_dir = tmp_path / "segments" / "1" / "2" / "4"
    seg_dir.mkdir(parents=True)
    (seg_dir / "index_101.bin").write_bytes(b"x")
    real_unlink = os.unlink

    def unlink_then_the_other_takes_the_directory(path, *args, **kw):
        real_unlink(path, *args, **kw)
        os.rmdir(os.path.dirname(path))

    monkeypatch.setattr(backend.os, "unlink", unlink_then_the_other_takes_the_directory)
    assert sf.remove_stored_file(str(tmp_path), "segments/1/2/4/index_101.bin") is True
    assert not seg_dir.exists()
