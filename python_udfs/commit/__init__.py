"""The per-key commit of a pk_table: the merge run on executors (applyInArrow)."""
