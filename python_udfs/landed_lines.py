"""The landing folder as numbered lines: the streaming reader both ingests use
(``contract_ingest``, ``landing_ingest``) and the per-batch numbering that gives every
line its file and 1-based physical line number.

The files are read by Spark's text source in line mode, so a large file is read in
parallel splits (a whole-file read is one task per file and cannot hold a file of 2 GB or
more). Lines end at ``\\n``, ``\\r\\n`` or ``\\r``. Line numbers come the way
``RDD.zipWithIndex`` gives indices: a split ``(file, block)`` is read by one task, in file
order, so a line's position in its split is its ``monotonically_increasing_id()`` minus the
split's first; one aggregation counts each split's lines, and the lines of a file's earlier
splits come before it. Both reads of the micro-batch plan the same splits (the same files and
settings), as zipWithIndex's two passes do.
"""

from __future__ import annotations

from typing import Optional

BLANK = r"(?U)^\s*$"  # a blank or whitespace-only line ((?U): Unicode white space)


def line_stream(spark, landing_dir: str, max_files_per_trigger: Optional[int]):
    """The streaming DataFrame of every line of each new file under ``landing_dir``:
    ``file`` (Spark's URI of the file), ``block`` (the start offset of the split the line
    was read from), ``text``, ``batch_us`` (the micro-batch's timestamp from the offset
    log: a replayed batch gets the same value)."""
    from pyspark.sql import functions as F

    reader = (
        spark.readStream.format("text")
        .option("recursiveFileLookup", True)
        # The default maxFileAge (7 days) silently skips a file whose modification time is
        # older than the newest seen file minus 7 days.
        .option("maxFileAge", "365000d")
    )
    if max_files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", int(max_files_per_trigger))
    return reader.load(landing_dir).select(
        F.col("_metadata.file_path").alias("file"),
        F.col("_metadata.file_block_start").alias("block"),
        F.col("value").alias("text"),
        # In a streaming plan current_timestamp() is the batch timestamp of the offset log.
        F.unix_micros(F.current_timestamp()).alias("batch_us"),
    )


def numbered_lines(batch_df):
    """One micro-batch of ``line_stream`` as ``file, line, n_events, text, batch_us``: a
    marker row per file (``line`` 0, ``n_events`` = the file's non-blank lines, ``text``
    NULL) and a row per non-blank line (``line`` >= 1, a leading byte-order mark dropped,
    ``n_events`` 0). A file with no byte has no line and no marker. Runs one job now (the
    per-split counts, one row per split, brought to the driver); the lines are read again
    where the result is used."""
    from pyspark.sql import functions as F

    rows = batch_df.withColumn("__pos", F.monotonically_increasing_id())
    counts = rows.groupBy("file", "block").agg(
        F.min("__pos").alias("first"),
        F.count(F.lit(1)).alias("lines"),
        F.count(F.when(~F.col("text").rlike(BLANK), 1)).alias("events"),
        F.max("batch_us").alias("batch_us"),
    ).collect()
    splits, markers, before = [], {}, {}
    for r in sorted(counts, key=lambda r: (r["file"], r["block"])):
        splits.append((r["file"], r["block"], r["first"], before.get(r["file"], 0)))
        before[r["file"]] = before.get(r["file"], 0) + r["lines"]
        n, us = markers.get(r["file"], (0, None))
        markers[r["file"]] = (n + r["events"], r["batch_us"] if us is None else max(us, r["batch_us"]))
    spark = batch_df.sparkSession
    split_df = spark.createDataFrame(
        splits, "file string, block bigint, __first bigint, __before bigint")
    marker_df = spark.createDataFrame(
        [(f, 0, n, None, us) for f, (n, us) in markers.items()],
        "file string, line bigint, n_events bigint, text string, batch_us bigint")
    lines = (
        rows.join(F.broadcast(split_df), ["file", "block"])
        .select(
            "file",
            (F.col("__before") + F.col("__pos") - F.col("__first") + 1).alias("line"),
            F.lit(0).cast("bigint").alias("n_events"),
            F.regexp_replace("text", "^\ufeff", "").alias("text"),
            "batch_us",
        )
        .where(~F.col("text").rlike(BLANK))
    )
    return lines.unionByName(marker_df)
