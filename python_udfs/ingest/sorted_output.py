"""A commit's output as sorted files: one file for a small commit, ranges written in
parallel for a bulk one, optionally numbered 1..N in the sort order."""

from __future__ import annotations

from typing import List

from python_udfs.jvm import kept

__all__ = ["numbered_in_order", "sorted_files"]

# A commit's output of up to _ONE_FILE_MAX rows is one file, sorted in one task; a larger one
# (a bulk load) is range partitioned into at least one file per core and at most about
# _ROWS_PER_FILE rows a file, sorted and written in parallel.
_ONE_FILE_MAX = 200_000
_ROWS_PER_FILE = 1_000_000


def _file_count(spark, rows: int) -> int:
    if rows <= _ONE_FILE_MAX:
        return 1
    return max(spark.sparkContext.defaultParallelism, -(-rows // _ROWS_PER_FILE))


def sorted_files(df, order: List[str], rows: int):
    """``df`` as the files of one commit, each sorted by ``order``: one file up to
    ``_ONE_FILE_MAX`` rows (``rows`` is the expected count), else ranges of ``order``
    written in parallel."""
    n = _file_count(df.sparkSession, rows)
    if n == 1:
        return df.repartition(1).sortWithinPartitions(*order)
    return df.repartitionByRange(n, *order).sortWithinPartitions(*order)


def numbered_in_order(df, order: List[str], rows: int, name: str, held: List):
    """``df`` with ``name`` = 1..N in ``order`` (unique per row), as sorted files
    (``sorted_files``). Up to ``_ONE_FILE_MAX`` rows: ``row_number`` over one partition.
    More: the rows are range partitioned and sorted in parallel (kept, so the numbering
    and the write see the same partitions), each partition's row count is collected, and a
    row's number is the rows of earlier ranges plus its position in its own range
    (zipWithIndex's method; a global ``row_number`` would sort every row in one task). The
    kept frame is appended to ``held``: the caller releases it after the write."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spark = df.sparkSession
    n = _file_count(spark, rows)
    if n == 1:
        return (df.withColumn(name, F.row_number().over(Window.orderBy(*order)).cast("bigint"))
                .repartition(1).sortWithinPartitions(name))
    ranged = kept(
        df.repartitionByRange(n, *order).sortWithinPartitions(*order)
        .withColumn("__part", F.spark_partition_id())
        .withColumn("__pos", F.monotonically_increasing_id())
    )
    held.append(ranged)
    counts = sorted(ranged.groupBy("__part").agg(F.min("__pos").alias("first"), F.count(F.lit(1)).alias("n"))
                    .collect())
    offsets, before = [], 0
    for r in counts:
        offsets.append((r["__part"], r["first"], before))
        before += r["n"]
    split = spark.createDataFrame(offsets, "__part int, __first bigint, __before bigint")
    return (
        ranged.join(F.broadcast(split), "__part")
        .withColumn(name, (F.col("__before") + F.col("__pos") - F.col("__first") + 1).cast("bigint"))
        .drop("__part", "__pos", "__first", "__before")
    )
