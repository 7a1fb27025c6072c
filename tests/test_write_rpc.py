"""WriteService: another process's proxy writes through the coordinator's gRPC port (here an in-process server
with CatalogService and WriteService over the coordinator's Writer, no cluster).  Rows travel as Arrow IPC,
results as Milvus's MutationResult, failures as Milvus Status codes; flush and compaction go to the DataCoord
wired in, or answer "service unimplemented" without one."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
import pytest_asyncio

from vecgrid import errors
from vecgrid.cluster.lifecycle import Lifecycle, StateCode
from vecgrid.cluster.proxy.proxy import Proxy
from vecgrid.cluster.proxy.write_access import LocalWrites
from vecgrid.cluster.querycoord.ddl import Ddl
from vecgrid.proto import write_service_pb2, write_service_pb2_grpc
from vecgrid.rpc.catalog_servicer import catalog_service
from vecgrid.rpc.server import GrpcServer
from vecgrid.rpc.write_servicer import WriteServicer, write_service
from vecgrid.storage.dml import InsertBatch
from tests.conftest import aio_channel
from tests.proxy_support import rows_for, write_schema
from tests.write_support import DIM, WriteSetup

pytestmark = pytest.mark.asyncio


class FakeDataCoord:
    """Flush and compaction answers chosen here; index progress is the catalog's, as the DataCoord reads it."""

    def __init__(self, catalog=None) -> None:
        self.calls: list[tuple[str, int]] = []
        self.catalog = catalog
        self.flush_job = {"flush_id": 5, "collection_id": 0, "state": "Executing", "progress": 50, "channels": 2,
                          "channels_flushed": 1, "segment_ids": [21], "error": ""}
        self.compaction_job = {"compaction_id": 6, "collection_id": 0, "state": "Failed", "progress": 50,
                               "executing_plans": 0, "completed_plans": 1, "failed_plans": 1, "error": "disk full"}

    async def start_flush(self, collection_id: int) -> dict:
        self.calls.append(("start_flush", collection_id))
        self.flush_job["collection_id"] = collection_id
        return dict(self.flush_job)

    def flush_state(self, flush_id: int) -> dict:
        if flush_id != self.flush_job["flush_id"]:
            raise errors.ParameterInvalid(f"no flush {flush_id}")
        return dict(self.flush_job)

    async def start_compaction(self, collection_id: int) -> dict:
        self.calls.append(("start_compaction", collection_id))
        self.compaction_job["collection_id"] = collection_id
        return dict(self.compaction_job)

    def compaction_state(self, compaction_id: int) -> dict:
        return dict(self.compaction_job)

    async def index_progress(self, collection_id: int) -> list[dict]:
        from vecgrid.cluster.datacoord.index_builder import index_progress

        return [{**i, "fail_reason": ""} for i in index_progress(self.catalog, [collection_id])]

    async def flush(self, collection_id: int) -> list[int]:
        self.calls.append(("flush", collection_id))
        return [11, 12]

    async def compact(self, collection_id: int) -> int:
        self.calls.append(("compact", collection_id))
        return 77


class Server:
    def __init__(self, setup: WriteSetup) -> None:
        self.setup = setup
        self.resolved: list[tuple] = []
        self.datacoord = FakeDataCoord(setup.catalog)
        # the definitions owner over the setup's catalog: a coordinator that is serving (CreateIndex goes there)
        lifecycle = Lifecycle("querycoord")
        lifecycle.set(StateCode.Healthy)
        self.loaded: dict[int, object] = {}   # the coordinator's loaded collections, by id (DropIndex asks)
        ddl = Ddl(SimpleNamespace(catalog=setup.catalog, lifecycle=lifecycle,
                                  collections=SimpleNamespace(get=self.loaded.get)))
        self.servicer = WriteServicer(LocalWrites(setup.writer, self.resolve, self.datacoord), ddl)
        self.grpc = GrpcServer("test")
        self.address = ""

    async def resolve(self, db_name, collection, filter, partition):
        self.resolved.append((db_name, collection, filter, partition))
        return [3, 4]

    async def start(self) -> None:
        port = await self.grpc.start("127.0.0.1", 0, [catalog_service(self.setup.catalog),
                                                      write_service(self.servicer)])
        self.address = f"127.0.0.1:{port}"


@pytest_asyncio.fixture
async def server(tmp_path):
    setup = WriteSetup(tmp_path)
    s = Server(setup)
    await s.start()
    yield s
    await s.grpc.stop(0)
    setup.close()


async def test_writes_over_grpc_land_in_the_log(server):
    setup = server.setup
    async with Proxy(server.address) as proxy:
        done = await proxy.insert("plain", rows_for(list(range(10)), DIM))
        assert (done.insert_cnt, done.ids, done.succ_index) == (10, list(range(10)), list(range(10)))
        rows = [{"pk": 100 + i, "vec": [float(i)] * DIM, "age": i, "tag": "d"} for i in range(3)]
        assert (await proxy.insert("plain", rows)).ids == [100, 101, 102]
        table = pa.table({"pk": ["x", "y"], "vec": pa.FixedSizeListArray.from_arrays(
            pa.array(np.zeros(2 * DIM, np.float32)), DIM), "age": pa.array([1, 2], pa.int32()), "tag": ["a", "b"]})
        up = await proxy.upsert("keys", table)
        assert (up.upsert_cnt, up.ids) == (2, ["x", "y"])
        gone = await proxy.delete("keys", ids=["x"])
        assert (gone.delete_cnt, gone.ids) == (1, ["x"]) and gone.timestamp > up.timestamp
        by_filter = await proxy.delete("plain", filter={"age": {"$lt": 5}}, partition="_default")
        assert by_filter.delete_cnt == 2 and by_filter.ids == [3, 4]
        assert server.resolved == [("", "plain", {"age": {"$lt": 5}}, "_default")]
        assert await proxy.flush("plain") == [11, 12]
        assert await proxy.compact("plain") == 77
        assert server.datacoord.calls == [("flush", setup.colls["plain"].id), ("compact", setup.colls["plain"].id)]
        acked = await proxy.writes.guarantees(list(setup.colls["plain"].vchannels))
        assert acked == {ch: setup.log(ch)[-1][1] for ch in setup.colls["plain"].vchannels}   # newest records
    logged = sorted(k for ch in setup.colls["plain"].vchannels for _, _, b in setup.log(ch)
                    if isinstance(b, InsertBatch) for k in b.primary_keys.to_pylist())
    assert logged == list(range(10)) + [100, 101, 102]


async def test_failures_come_back_as_milvus_codes(server):
    setup = server.setup
    channels = setup.colls["plain"].vchannels
    setup.leaders = {ch: [5] for ch in channels}
    async with Proxy(server.address) as proxy:
        with pytest.raises(errors.CollectionNotFound) as info:
            await proxy.insert("nope", pa.table({"pk": [1]}))
        assert info.value.code == 100
        bad = rows_for([1, 2], DIM)
        bad["vec"][0, 0] = np.inf
        with pytest.raises(errors.ParameterInvalid, match="NaN or Inf"):
            await proxy.insert("plain", bad)
        with pytest.raises(errors.ParameterInvalid, match="unexpected field `color`"):
            await proxy.insert("plain", [{"pk": 1, "vec": [0.0] * DIM, "age": 1, "tag": "a", "color": 1}])
        before = setup.logs()
        with pytest.raises(errors.ServiceQuotaExceeded, match="querynode.max_growing_mb") as info:
            await proxy.insert("plain", rows_for(list(range(30_000)), DIM))
        assert info.value.code == 9
        assert setup.logs() == before
        server.servicer.writes.datacoord = None
        with pytest.raises(errors.ServiceUnimplemented, match="DataCoord"):
            await proxy.flush("plain")
        server.servicer.writes = None
        with pytest.raises(errors.ServiceNotReady):
            await proxy.delete("plain", ids=[1])


async def test_malformed_requests_are_refused(server):
    stub = write_service_pb2_grpc.WriteServiceStub(aio_channel(server.address))
    reply = await stub.Insert(write_service_pb2.InsertRequest(collection_name="plain", rows=b"not arrow"))
    assert reply.status.code == 1100 and "Arrow IPC" in reply.status.reason
    reply = await stub.Delete(write_service_pb2.DeleteRequest(collection_name="plain", filter="{nope"))
    assert reply.status.code == 1100 and "not JSON" in reply.status.reason
    reply = await stub.Delete(write_service_pb2.DeleteRequest(collection_name="plain"))
    assert reply.status.code == 1100 and "either primary keys" in reply.status.reason


async def test_progress_of_flush_compaction_and_index_builds_over_grpc(server):
    setup = server.setup
    plain = setup.colls["plain"].id
    async with Proxy(server.address) as proxy:
        started = await proxy.writes.start_flush("", "plain")
        assert started == {**server.datacoord.flush_job, "collection_id": plain}
        assert await proxy.writes.flush_state(5) == started
        with pytest.raises(errors.ParameterInvalid, match="no flush 9"):
            await proxy.writes.flush_state(9)
        compaction = await proxy.writes.start_compaction("", "plain")
        assert compaction == {**server.datacoord.compaction_job, "collection_id": plain}
        assert server.datacoord.calls == [("start_flush", plain), ("start_compaction", plain)]

        [index] = await proxy.writes.index_progress("", "plain")   # the FLAT index of the fixture, no segments
        assert (index["index_name"], index["field"], index["state"], index["total_rows"], index["progress"]) == (
            "vec", "vec", "Finished", 0, 100)
        with pytest.raises(errors.IndexNotFound):
            await proxy.writes.index_progress("", "plain", "nope")
        setup.catalog.create_collection("default", "bare", write_schema(DIM), shards_num=1)
        with pytest.raises(errors.ParameterInvalid, match="nlist"):
            await proxy.writes.create_index("", "bare", "vec", "IVF_FLAT", "L2", {"nlist": -1}, "")
        created = await proxy.writes.create_index("", "bare", "vec", "IVF_FLAT", "IP", {"nlist": 8}, "ivf")
        assert (created["index_name"], created["field"], created["state"], created["pending_index_rows"]) == (
            "ivf", "vec", "Finished", 0)
        assert [i["index_name"] for i in await proxy.writes.index_progress("", "bare", "vec")] == ["ivf"]
        with pytest.raises(errors.ParameterInvalid, match="drop it first"):   # one index per field
            await proxy.writes.create_index("", "plain", "vec", "HNSW", "L2", {}, "")
    stub = write_service_pb2_grpc.WriteServiceStub(aio_channel(server.address))
    reply = await stub.CreateIndex(
        write_service_pb2.CreateIndexRequest(collection_name="keys", field_name="vec", params="{nope")
    )
    assert reply.status.code == 1100 and "not JSON" in reply.status.reason
    reply = await stub.GetFlushState(write_service_pb2.GetFlushStateRequest(flushID=5))
    assert (reply.flushed, reply.progress, reply.channels_flushed, list(reply.segmentIDs)) == (False, 50, 1, [21])
    reply = await stub.GetCompactionState(write_service_pb2.GetCompactionStateRequest(compactionID=6))
    assert (reply.state, reply.completedPlanNo, reply.failedPlanNo, reply.fail_reason) == ("Failed", 1, 1, "disk full")


async def test_drop_index_over_grpc(server):
    setup = server.setup
    plain = setup.colls["plain"].id
    async with Proxy(server.address) as proxy:
        server.loaded[plain] = object()
        with pytest.raises(errors.ParameterInvalid, match="release it first"):   # as Milvus refuses it
            await proxy.writes.drop_index("", "plain", field="vec")
        assert [i.index_name for i in setup.catalog.describe_index(plain)] == ["vec"]
        del server.loaded[plain]
        assert await proxy.writes.drop_index("", "plain", field="vec") == {"index_name": "vec", "field": "vec"}
        assert setup.catalog.describe_index(plain) == []
        with pytest.raises(errors.IndexNotFound, match="no index on field 'vec'"):
            await proxy.writes.drop_index("", "plain", field="vec")
        # by the index's name; then the field takes another index
        await proxy.writes.create_index("", "plain", "vec", "IVF_FLAT", "L2", {"nlist": 8}, "ivf")
        with pytest.raises(errors.IndexNotFound, match="no index 'ivf' on field 'age'"):
            await proxy.writes.drop_index("", "plain", field="age", index_name="ivf")
        assert await proxy.writes.drop_index("", "plain", index_name="ivf") == {"index_name": "ivf", "field": "vec"}
        assert (await proxy.writes.create_index("", "plain", "vec", "HNSW", "L2", {}, ""))["index_name"] == "vec"
        with pytest.raises(errors.CollectionNotFound):
            await proxy.writes.drop_index("", "nope", field="vec")
    stub = write_service_pb2_grpc.WriteServiceStub(aio_channel(server.address))
    reply = await stub.DropIndex(write_service_pb2.DropIndexRequest(collection_name="plain"))
    assert reply.status.code == 1100 and "field or the index name" in reply.status.reason
