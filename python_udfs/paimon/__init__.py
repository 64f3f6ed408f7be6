"""Apache Paimon primary-key table semantics: option validation and the merge kernel (pure Python)."""
