"""Commits: the protocol every lakerank write follows (protocol.py) and the per-key merge of a
pk_table commit, run on executors (pk_commit.py)."""
