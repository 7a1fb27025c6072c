"""The client role of Milvus's Proxy: catalog access, shard leaders, retries, filters and the
reduce of channel answers.  The REST app and the CLI read through :class:`.proxy.Proxy`."""
