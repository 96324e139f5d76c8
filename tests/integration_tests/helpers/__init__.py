"""Helpers shared by the reliability, cluster, property and multi-process tests."""
