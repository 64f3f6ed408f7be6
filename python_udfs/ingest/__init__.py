"""Streaming exactly-once ingests of landed JSON Lines files."""
