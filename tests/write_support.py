"""The coordinator's write path without a cluster: a catalog, the channels' appenders, a Writer over them, and
the channels' logs read back."""

from __future__ import annotations

import os

from vecgrid.cluster.proxy.writer import Writer
from vecgrid.cluster.streaming import ChannelAppenders
from vecgrid.storage.dml import decode_dml
from vecgrid.storage.layout import DataDir
from vecgrid.storage.wal import Wal
from tests.proxy_support import create_collection

DIM = 8


class WriteSetup:
    """Collections: plain (2 shards, a default), dyn (dynamic field), auto (auto_id, 2 shards), keys (VarChar
    keys, 2 shards); a 1 MB growing quota, ``leaders`` telling which node leads a channel."""

    def __init__(self, root) -> None:
        data = DataDir(str(root))
        self.store = data.open_store()
        self.catalog = data.open_catalog(self.store)
        self.wal = Wal(str(data.wal_root))
        self.appenders = ChannelAppenders(self.wal, self.catalog.allocate_timestamp, self.catalog.allocate_segment_id)
        self.leaders: dict[str, list[int]] = {}
        self.writer = Writer(self.catalog, self.appenders, max_growing_mb=1.0,
                             leaders_of_channel=lambda channel: self.leaders.get(channel, []))
        self.colls = {
            "plain": create_collection(self.catalog, "plain", dim=DIM, shards=2, defaults=True),
            "dyn": create_collection(self.catalog, "dyn", dim=DIM, shards=1, dynamic=True),
            "auto": create_collection(self.catalog, "auto", dim=DIM, shards=2, auto_id=True),
            "keys": create_collection(self.catalog, "keys", dim=DIM, shards=2, str_pk=True),
        }

    def log(self, channel: str) -> list[tuple[int, int, object]]:
        """``(kind, timestamp, message)`` of every record of the channel."""
        if not os.path.isdir(self.wal.channel_dir(channel)):
            return []
        with self.wal.open_reader(channel, "earliest") as reader:
            return [(int(r.kind), r.timestamp, decode_dml(r.payload)) for r in reader]

    def logs(self) -> dict[str, list]:
        """Every channel's records as ``(kind, timestamp, payload bytes)``: what "nothing written" compares."""
        out = {}
        for coll in self.colls.values():
            for ch in coll.vchannels:
                if not os.path.isdir(self.wal.channel_dir(ch)):
                    out[ch] = []
                    continue
                with self.wal.open_reader(ch, "earliest") as reader:
                    out[ch] = [(int(r.kind), r.timestamp, bytes(r.payload)) for r in reader]
        return out

    def close(self) -> None:
        self.appenders.close()
        self.store.close()
