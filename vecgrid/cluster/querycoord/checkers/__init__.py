"""Periodic reconcilers that diff targets against the distribution and emit tasks."""
