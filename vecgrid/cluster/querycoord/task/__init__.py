"""Tasks: what to change on which node (task), carried out on Dask (executor), queued (scheduler)."""
