"""The contract ingest's state lookup: which stored rows a batch needs, as literal
predicates Parquet can skip rows with (row-group statistics and column indexes).

Each state partition's directory holds, beside its parquet files, a small record of the
contract ids it holds (``_contract_ids.json``: the least and the greatest), written into the
fresh directory before the partition is pointed at it (:func:`id_record`), so the record is
published with the rows, in the same metastore call: a replay's or a compaction's new
directory carries its own, and a killed attempt's is never read (``latest_state`` ignores
partitions from the running commit on). A partition written without one (before the record
existed) gets it computed from its rows once (one Spark job) and written beside them.

A batch's ids between the least and the greatest stored id (the others cannot be stored:
they are new contracts) are read from the driver and cut into at most ``MAX_RANGES`` ranges
at their widest gaps (each id its own range when there are that few): the state is read under
``contract_id = v OR contract_id BETWEEN a AND b ...``, which Spark pushes to Parquet as it
is, so a row group (``STATE_ROW_GROUP_ROWS`` rows of a file sorted by contract_id), or a page
of one, that no range meets is skipped. An IN list would not do: Spark
pushes one longer than ``spark.sql.parquet.pushdown.inFilterThreshold`` (10) as its
min..max, which spans the whole state (the probe: every row read), and one pushed value by
value past a few thousand overflows the stack of Parquet's filter. When the stored span is
under ``MIN_LOOKUP_SPAN`` (a state that small is read whole faster), the batch has more than
``MAX_LOOKUP_IDS`` such ids, or the ranges cover more than ``MAX_COVERED`` of the stored
span, pruning cannot pay and the lookup says so (None): the caller reads every row.
The literals only prune; the caller's semi-join with the batch's contracts stays the exact
filter.
"""

from __future__ import annotations

import os
from functools import reduce
from typing import Dict, List, Optional, Tuple

from python_udfs.commit.protocol import partitions, read_json, write_json
from python_udfs.jvm import split_table_name

__all__ = ["ID_RECORD", "MAX_RANGES", "MIN_LOOKUP_SPAN", "STATE_ROW_GROUP_ROWS", "STATE_WRITE_OPTIONS", "id_record",
           "in_ranges", "lookup_ranges", "partition_locations", "span_of"]

ID_RECORD = "_contract_ids.json"  # a leading '_': Spark's readers skip it
# State files are written sorted by contract_id in row groups of STATE_ROW_GROUP_ROWS rows:
# Parquet's row-group statistics let a lookup skip a row group no range meets (its column
# index, at Parquet's default pages, skips pages within the rest). Pages of 1,000 rows cut the
# rows read further but not the seconds (scripts/probes/probe_state_lookup.py,
# docs/benchmarks.md).
STATE_ROW_GROUP_ROWS = 10_000
STATE_WRITE_OPTIONS = {"parquet.block.row.count.limit": str(STATE_ROW_GROUP_ROWS)}
MAX_RANGES = 128  # disjuncts of the lookup's predicate
MAX_LOOKUP_IDS = 100_000  # ids collected to the driver at most
MAX_COVERED = 0.5  # of the stored id span: beyond it the ranges prune too little to pay
# A state whose id span (an upper bound of its rows) is narrower is read whole: the probe's
# whole read of 1e6 contracts took 0.49 s against 0.73 s looked up (151 stored ids touch 83
# of its 100 row groups), 3e6 2.10 s against 0.80 s. LAKERANK_STATE_LOOKUP_MIN_SPAN sets it
# (0: the lookup on any state, as the tests and the bench use it on small ones).
MIN_LOOKUP_SPAN = 1_500_000

Span = Tuple[int, int]


def id_record(low: Optional[int], high: Optional[int]) -> Dict[str, Optional[int]]:
    """The record (``ID_RECORD``'s content) of a partition holding contract ids
    ``low``..``high`` (None, None: no rows)."""
    return {"min_contract_id": low, "max_contract_id": high}


def _partition_span(spark, location: str) -> Optional[Span]:
    """The least and greatest contract id of the partition at ``location`` (None: no rows),
    from its record; computed from its rows and recorded when it has none."""
    record = read_json(spark, f"{location}/{ID_RECORD}")
    if record is None:
        from pyspark.sql import functions as F

        row = spark.read.parquet(location).agg(F.min("contract_id"), F.max("contract_id")).first()
        record = id_record(row[0], row[1])
        write_json(spark, f"{location}/{ID_RECORD}", record)
    if record["max_contract_id"] is None:
        return None
    return int(record["min_contract_id"]), int(record["max_contract_id"])


def partition_locations(spark, table: str, below: int) -> Dict[int, str]:
    """Each state partition ``_commit_id < below``: its location (one metastore listing)."""
    return {int(spec.split("=", 1)[1]): location
            for spec, (_part, location) in partitions(spark, split_table_name(spark, table)).items()
            if int(spec.split("=", 1)[1]) < below}


def span_of(spark, locations) -> Optional[Span]:
    """The least and greatest contract id of the partitions at ``locations`` (None: no rows),
    from their records (one small read each)."""
    spans = [s for s in (_partition_span(spark, loc) for loc in locations) if s is not None]
    if not spans:
        return None
    return min(s[0] for s in spans), max(s[1] for s in spans)


def _cut(ids: List[int], n: int) -> List[Span]:
    """Sorted distinct ``ids`` as at most ``n`` ranges, cut at the ``n - 1`` widest gaps."""
    if not ids:
        return []
    gaps = sorted(range(1, len(ids)), key=lambda i: ids[i] - ids[i - 1], reverse=True)[:n - 1]
    starts = [0, *sorted(gaps)]
    ends = [*[s - 1 for s in starts[1:]], len(ids) - 1]
    return [(ids[a], ids[b]) for a, b in zip(starts, ends)]


def lookup_ranges(spark, table: str, below: int, contracts,
                  locations: Optional[Dict[int, str]] = None) -> Optional[List[Span]]:
    """The ranges of contract ids the state partitions ``< below`` are read under for the
    ids of ``contracts`` (a DataFrame of distinct contract_id): [] when none of them can be
    stored, None when pruning cannot pay (read every row): a stored id span under
    ``MIN_LOOKUP_SPAN``, more than ``MAX_LOOKUP_IDS`` ids to look up, or ranges covering
    more than ``MAX_COVERED`` of the span. One Spark job (the ids' collect) when the span is
    that wide. ``locations``: :func:`partition_locations` of ``table`` and ``below`` when
    the caller has listed them already."""
    from pyspark.sql import functions as F

    if locations is None:
        locations = partition_locations(spark, table, below)
    span = span_of(spark, locations.values())
    if span is None:
        return []
    low, high = span
    if high - low + 1 < int(os.environ.get("LAKERANK_STATE_LOOKUP_MIN_SPAN", MIN_LOOKUP_SPAN)):
        return None
    ids = sorted(int(r[0]) for r in contracts.where(F.col("contract_id").between(low, high))
                 .limit(MAX_LOOKUP_IDS + 1).collect())
    if len(ids) > MAX_LOOKUP_IDS:
        return None
    ranges = _cut(ids, MAX_RANGES)
    if sum(b - a + 1 for a, b in ranges) > MAX_COVERED * (high - low + 1):
        return None
    return ranges


def in_ranges(ranges: List[Span]):
    """``contract_id`` in one of ``ranges``, a balanced OR of equalities and BETWEENs
    (false for none)."""
    from pyspark.sql import functions as F

    c = F.col("contract_id")
    terms = [c == F.lit(a) if a == b else c.between(F.lit(a), F.lit(b)) for a, b in ranges]
    if not terms:
        return F.lit(False)
    while len(terms) > 1:
        terms = [reduce(lambda x, y: x | y, terms[i:i + 2]) for i in range(0, len(terms), 2)]
    return terms[0]
