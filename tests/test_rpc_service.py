"""The servicer wrapper turns every outcome into a Milvus Status and never raises."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vecgrid import errors
from vecgrid.errors import raise_for_status
from vecgrid.proto import query_coord_pb2, query_coord_pb2_grpc
from vecgrid.rpc.service import milvus_servicer, pending_methods
from vecgrid.rpc.status import success, to_status

SERVICE = query_coord_pb2.DESCRIPTOR.services_by_name["QueryCoord"]


@milvus_servicer(SERVICE, query_coord_pb2_grpc.QueryCoordServicer)
class Failing:
    async def ListQueryNode(self, request, context):
        raise errors.NodeNotFound(node=7)

    async def LoadCollection(self, request, context):
        raise RuntimeError("boom")


async def test_milvus_error_becomes_status_in_the_response_type():
    reply = await Failing().ListQueryNode(query_coord_pb2.ListQueryNodeRequest(), None)
    assert isinstance(reply, query_coord_pb2.ListQueryNodeResponse)
    assert reply.status.code == 901 and reply.status.reason == "node not found[node=7]"
    assert reply.status.error_code == 1


async def test_unexpected_exception_is_code_65535_not_a_crash():
    reply = await Failing().LoadCollection(query_coord_pb2.LoadCollectionRequest(), None)
    assert reply.code == 65535 and "RuntimeError: boom" in reply.reason


async def test_undefined_methods_answer_unimplemented():
    assert "ListQueryNode" not in pending_methods(Failing)
    assert "ShowCollections" in pending_methods(Failing)
    reply = await Failing().ShowCollections(query_coord_pb2.ShowCollectionsRequest(), None)
    assert reply.status.code == 10


def test_status_round_trip_and_legacy_codes():
    assert success().code == 0
    status = to_status(errors.ParameterInvalid("bad replica", collection=5))
    assert (status.code, status.error_code) == (1100, 5)
    assert status.reason == "invalid parameter[collection=5]: bad replica"
    with pytest.raises(errors.ParameterInvalid) as err:
        raise_for_status(status)
    assert str(err.value) == status.reason
    assert to_status(errors.ServiceNotReady("Initializing", querycoord=1)).error_code == 56
    raise_for_status(success())


def test_non_async_method_is_rejected_at_class_creation():
    with pytest.raises(TypeError):
        @milvus_servicer(SERVICE, query_coord_pb2_grpc.QueryCoordServicer)
        class Bad:
            def ListQueryNode(self, request, context):
                return None


@pytest.mark.slow
def test_vecgrid_imports_without_faiss_and_names_the_extra():
    code = (
        "import sys; sys.modules['faiss'] = None\n"
        "import vecgrid, vecgrid.cli, vecgrid.deploy, vecgrid.gpu\n"
        "try:\n    vecgrid.gpu.require_faiss()\nexcept vecgrid.gpu.FaissMissing as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "vecgrid[cpu]" in out.stdout and "vecgrid[gpu]" in out.stdout
