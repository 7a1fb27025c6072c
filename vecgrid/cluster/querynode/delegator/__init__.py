"""The shard delegator: the leader of one DML channel on its query node."""
