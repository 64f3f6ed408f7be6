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

The usual micro-batch is a few small files, each read whole by one task. When every file of
the batch is too small to be split (no larger than ``spark.sql.files.openCostInBytes`` and
``maxPartitionBytes``: Spark never cuts a file below the smaller of them), a line's number is
its rank by position within its file, one window in the batch's own job: the counting job
is skipped. The batch's files and sizes are read from the
stream's checkpoint (the file source log) and the file system; anything unexpected there
falls back to counting.
"""

from __future__ import annotations

import json
from typing import List, Optional

BLANK = r"(?U)^\s*$"  # a blank or whitespace-only line ((?U): Unicode white space)
# Java's default ``\s``: space, tab, LF, VT, FF, CR.
_SPACE = " \t\n\x0b\x0c\r"


def is_event(text):
    """Whether line ``text`` is not blank. A line opening with ``{`` (nearly every event) is
    decided without the regex, which tries a match at every position of the line."""
    return text.startswith("{") | ~text.rlike(BLANK)


def without_bom(text):
    """``text`` without a leading byte-order mark."""
    from pyspark.sql import functions as F

    return F.when(text.startswith("\ufeff"), text.substr(F.lit(2), F.length(text))).otherwise(text)


def trim_space(col):
    r"""``col`` without leading and trailing white space (Java's ``\s``) by a character trim,
    for what ``regexp_replace(col, '^\s+|\s+$', '')`` did, whose second branch is tried at
    every position of the text (a JSON line: ~5 % of its parse). The regex's ``$`` also
    matches before a final line terminator (``\x85``, ``\u2028``, ``\u2029``), so on a text
    ending in one the two differ, but both keep that terminator: whether the result opens
    with ``{``, ends with ``}`` or casts to a number is the same (tested)."""
    from pyspark.sql import functions as F

    return F.trim(col, F.lit(_SPACE))


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


def batch_files(spark, checkpoint_dir: str, batch_id: int) -> Optional[List[str]]:
    """The files of micro-batch ``batch_id`` of the stream checkpointed at
    ``checkpoint_dir``, from its file source log (``sources/0/<id>`` or, every tenth batch,
    ``<id>.compact``, whose entries carry their batch id); None when the log cannot be read."""
    from python_udfs.jvm import jvm_class

    try:
        path_cls = jvm_class(spark, "org.apache.hadoop.fs.Path")
        conf = spark._jsc.hadoopConfiguration()
        for name in (str(batch_id), f"{batch_id}.compact"):
            log = path_cls(f"{checkpoint_dir.rstrip('/')}/sources/0/{name}")
            fs = log.getFileSystem(conf)
            if not fs.exists(log):
                continue
            stream = fs.open(log)
            try:
                text = jvm_class(spark, "org.apache.commons.io.IOUtils").toString(stream, "UTF-8")
            finally:
                stream.close()
            lines = text.splitlines()
            if not lines or not lines[0].startswith("v"):
                return None
            entries = [json.loads(line) for line in lines[1:] if line.strip()]
            return [e["path"] for e in entries if int(e.get("batchId", batch_id)) == batch_id]
        return None
    except Exception:  # noqa: BLE001 -- any surprise: the caller counts instead
        return None


def fit_one_split(spark, files: Optional[List[str]]) -> bool:
    """Whether every file of ``files`` is read whole by one task: no larger than the smaller
    of ``spark.sql.files.openCostInBytes`` and ``maxPartitionBytes`` (Spark's split size is
    never below it). False when ``files`` is None or a file cannot be stat'ed."""
    from python_udfs.jvm import jvm_class

    if files is None:
        return False
    sql_conf = spark._jsparkSession.sessionState().conf()
    limit = min(int(sql_conf.filesOpenCostInBytes()), int(sql_conf.filesMaxPartitionBytes()))
    try:
        path_cls = jvm_class(spark, "org.apache.hadoop.fs.Path")
        conf = spark._jsc.hadoopConfiguration()
        for f in files:
            p = path_cls(jvm_class(spark, "java.net.URI")(f))
            if p.getFileSystem(conf).getFileStatus(p).getLen() > limit:
                return False
        return True
    except Exception:  # noqa: BLE001
        return False


def whole_files(spark, checkpoint_dir: str, batch_id: int) -> bool:
    """Whether every file of micro-batch ``batch_id`` is read whole by one task."""
    return fit_one_split(spark, batch_files(spark, checkpoint_dir, batch_id))


def numbered_lines(batch_df, one_split_each: bool = False):
    """One micro-batch of ``line_stream`` as ``file, line, n_events, text, batch_us``: a
    marker row per file (``line`` 0, ``n_events`` = the file's non-blank lines, ``text``
    NULL) and a row per non-blank line (``line`` >= 1, a leading byte-order mark dropped,
    ``n_events`` 0). A file with no byte has no line and no marker. ``one_split_each``
    (``whole_files``: every file is read by one task) numbers the lines with a window over
    each file, in the job that uses the result. Otherwise this runs one job now (the
    per-split counts, one row per split, brought to the driver); the lines are read again
    where the result is used."""
    from pyspark.sql import functions as F

    if one_split_each:
        return _numbered_whole_files(batch_df)

    rows = batch_df.withColumn("__pos", F.monotonically_increasing_id())
    counts = rows.groupBy("file", "block").agg(
        F.min("__pos").alias("first"),
        F.count(F.lit(1)).alias("lines"),
        F.count(F.when(is_event(F.col("text")), 1)).alias("events"),
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
        .where(is_event(F.col("text")))  # as counted above: a line holding only a BOM is an event
        .select(
            "file",
            (F.col("__before") + F.col("__pos") - F.col("__first") + 1).alias("line"),
            F.lit(0).cast("bigint").alias("n_events"),
            without_bom(F.col("text")).alias("text"),
            "batch_us",
        )
    )
    return lines.unionByName(marker_df)


def _numbered_whole_files(batch_df):
    """``numbered_lines`` when every file is one split: a line's number is its rank by
    position in its file; the marker row comes from each file's first line."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    per_file = Window.partitionBy("file")
    event = is_event(F.col("text"))
    rows = batch_df.withColumn("__pos", F.monotonically_increasing_id()).select(
        "file",
        F.row_number().over(per_file.orderBy("__pos")).cast("bigint").alias("line"),
        F.count(F.when(event, 1)).over(per_file).alias("__events"),
        "text",
        "batch_us",
    )
    lines = rows.where(event).select(
        "file", "line", F.lit(0).cast("bigint").alias("n_events"),
        without_bom(F.col("text")).alias("text"), "batch_us",
    )
    markers = rows.where(F.col("line") == 1).select(
        "file", F.lit(0).cast("bigint").alias("line"), F.col("__events").cast("bigint").alias("n_events"),
        F.lit(None).cast("string").alias("text"), "batch_us",
    )
    return lines.unionByName(markers)
