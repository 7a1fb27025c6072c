"""Channel checkpoints: where a node resumes consuming a DML channel (DataCoord's channel checkpoints).

Part of :class:`~.meta.Catalog`; uses :mod:`.collections` (``collection_of_channel``,
``_require_collection``). A checkpoint only moves forward. It is the one record that another process
writes beside a live server (a bulk import or a flush publishes segments with their checkpoint), so
the catalog's lock is not enough to keep it monotonic: every change is a compare-and-swap on the
store (:meth:`set_channel_checkpoint`), or, when it goes with other writes, a transaction guarded by
the value it was decided from (:meth:`_commit_with_checkpoints`). A lost race reads again and decides
again, so a position older than the stored one is never written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from vecgrid import errors
from vecgrid.proto import msg_pb2

from ..kv import MetaTxn, MetaTxnConflictError
from . import keys
from .base import CatalogBase, copy_msg, decode, encode


def checkpoint_advances(vchannel: str, stored: bytes | None, pos: msg_pb2.MsgPosition) -> bool:
    """Whether ``pos`` may replace the stored checkpoint: a checkpoint never moves back."""
    if stored is None:
        return True
    return decode(msg_pb2.MsgPosition, keys.channel_cp_key(vchannel), stored).timestamp <= pos.timestamp


class CheckpointMeta(CatalogBase):
    """Checkpoints under ``datacoord-meta/channel-cp/<vchannel>``."""

    def _checked_position(self, vchannel: str, position: object) -> msg_pb2.MsgPosition:
        if not isinstance(position, msg_pb2.MsgPosition):
            raise errors.ParameterInvalid(
                f"a channel checkpoint must be a msg.MsgPosition, got {type(position).__name__}"
            )
        pos = copy_msg(position)
        if not pos.channel_name:
            pos.channel_name = vchannel
        elif pos.channel_name != vchannel:
            raise errors.ParameterInvalid(
                f"checkpoint position is on channel {pos.channel_name!r}, not {vchannel!r}"
            )
        if not pos.msgID:
            raise errors.ParameterInvalid(f"invalid channel checkpoint for {vchannel!r}: msgID is empty")
        return pos

    def set_channel_checkpoint(self, vchannel: str, position: msg_pb2.MsgPosition) -> bool:
        """Advance a live channel's checkpoint; an older position is ignored (returns ``False``)."""
        with self._lock:
            self.collection_of_channel(vchannel)
            pos = self._checked_position(vchannel, position)
            key, value = keys.channel_cp_key(vchannel), encode(pos)
            # Compare-and-swap, not read-then-put: the lock holds only in this process, and an
            # import or flush in another one may move the checkpoint between the read and the write.
            while True:
                raw = self._store.get(key)
                if not checkpoint_advances(vchannel, raw, pos):
                    return False
                if self._store.compare_and_swap(key, raw, value):
                    return True

    def get_channel_checkpoint(self, vchannel: str) -> msg_pb2.MsgPosition | None:
        """The channel's checkpoint, or ``None`` if none was set."""
        raw = self._store.get(keys.channel_cp_key(vchannel))
        return None if raw is None else decode(msg_pb2.MsgPosition, keys.channel_cp_key(vchannel), raw)

    def channel_checkpoints(self, collection_id: int) -> dict[str, msg_pb2.MsgPosition]:
        """Checkpoint of each of the collection's channels that has one."""
        pb = self._require_collection(collection_id)
        out = {}
        for ch in pb.virtual_channel_names:
            cp = self.get_channel_checkpoint(ch)
            if cp is not None:
                out[ch] = cp
        return out

    def _commit_with_checkpoints(self, write: Callable[[MetaTxn], None],
                                 positions: Iterable[msg_pb2.MsgPosition]) -> None:
        """Commit ``write``'s puts and the checkpoints among ``positions`` that advance, in ONE transaction.

        Of several positions on one channel the latest counts. Each checkpoint written is guarded by
        the value it was compared with; if another process moved one meanwhile, the whole transaction
        is refused and tried again from a fresh read (``write`` must put the same things each time).
        """
        latest: dict[str, msg_pb2.MsgPosition] = {}
        for pos in positions:
            if pos.channel_name not in latest or latest[pos.channel_name].timestamp <= pos.timestamp:
                latest[pos.channel_name] = pos
        while True:
            seen = {ch: self._store.get(keys.channel_cp_key(ch)) for ch in sorted(latest)}
            try:
                with self._store.txn() as t:
                    write(t)
                    for ch, raw in seen.items():
                        if checkpoint_advances(ch, raw, latest[ch]):
                            t.expect(keys.channel_cp_key(ch), raw)
                            t.put(keys.channel_cp_key(ch), encode(latest[ch]))
                return
            except MetaTxnConflictError:
                continue  # another process moved a checkpoint since it was read: decide again
