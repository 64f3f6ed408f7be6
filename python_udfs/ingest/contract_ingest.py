"""Exactly-once ingest of contract CDC events from JSON Lines files.

``run_contract_ingest`` consumes every file under a landing folder that an
earlier call has not consumed yet (Structured Streaming, ``availableNow``,
checkpoint in ``checkpoint_dir``), validates each line, applies the valid
events to per-contract state kept across calls in a state table, with set
operations only (a join and window functions; no Python UDF, no Python
worker) and writes, per micro-batch (= commit ``_commit_id``), three tables
(plus the state's delta):

* ``changelog_table``: the clean retract changelog of the contracts' live
  state (``+I``, ``-U``/``+U`` pairs, ``-D``), every transition, in
  ``(op_ts, file, line)`` order (``_seq`` 1..n within the commit);
* ``quarantine_table``: every line that is not a valid event, with a reason;
* ``ingest_log_table``: one row per commit with the counts, which reconcile:
  ``events_landed = applied + noop + stale + before_image + quarantined``.

Input
-----
One JSON object a line: ``op`` (``+I``, ``+U``, ``-U``, ``-D``),
``project_id`` (bigint), ``contract_id`` (bigint), ``sign_time``
(``yyyy-MM-dd HH:mm:ss``, session time zone), ``amount`` (decimal, optional),
``op_ts`` (``yyyy-MM-dd HH:mm:ss.SSS`` with 1-3 fraction digits, or
``yyyy-MM-dd HH:mm:ss``). Any file name is accepted; files and folders whose
name starts with ``.`` or ``_`` are ignored (Spark's rule), sub-folders are
read. Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (as Spark's line reader; a
leading byte-order mark is dropped); ``_source_line`` is the 1-based physical line number and
``_source_file`` Spark's URI of the file (``file:/...``, URL-encoded).
Blank or whitespace-only lines are not events: they are skipped and not
counted anywhere. A file is consumed once, by path: a file rewritten in
place under the same name is not read again. ``files`` in the ingest log
counts the files with at least one byte (an empty file yields no row).

Semantics (per ``contract_id``)
-------------------------------
Events are totally ordered by ``(op_ts, file, line)``. State per contract:
the order key of the last applied event, a live flag and the current image
``(project_id, sign_time, amount)``. A batch's events of a contract are
sorted by that key and each is applied to the state left by earlier ones:

* ``-U`` -> ``before_image``, whatever its order (nothing changes, state not advanced);
* order key <= state's order key -> ``stale`` (nothing changes);
* ``+I``/``+U``: live with the same image -> ``noop`` (order key advanced);
  live with another image -> emit ``-U`` old, ``+U`` new, ``applied``;
  not live -> emit ``+I`` new, ``applied``;
* ``-D``: live -> emit ``-D`` with the old image, ``applied``; not live ->
  ``noop`` but the order key advances (a tombstone: an older late ``+I`` is
  then ``stale``).

Changelog rows carry the event's ``op_ts``, file and line; ``_seq`` orders a
commit's rows by ``(op_ts, file, line)``, ``-U`` before its ``+U``.

Validation
----------
Lines are parsed with ``try_parse_json`` (VARIANT), which keeps JSON's own
types. The first failing check gives the quarantine reason:

* ``invalid json`` (not JSON, or text after the object), ``not a json object``;
* ``missing op`` (absent or null), ``unknown op 'X'``;
* ``null contract_id``, ``bad contract_id '1.5'`` (not a JSON integer literal
  in the bigint range: strings, decimals and booleans are rejected);
* ``null op_ts``, ``bad op_ts '...'``;
* for ``+I``/``+U``/``-U`` only: ``null project_id``, ``bad project_id '...'``,
  ``null sign_time``, ``bad sign_time '...'`` (``-D`` deletes with the stored
  image, its other fields are not used);
* for every op: ``bad amount '...'`` when ``amount`` is present (not null)
  but is not a JSON number or a string holding one that fits
  ``decimal(18,2)``; amounts are read exactly (never through a double) and
  rounded half-up to 2 places, as Spark's cast does.

Duplicate keys in one object make the line ``invalid json`` (VARIANT refuses
them).

State table and cost
--------------------
The state is a table (``state_table``, parquet, partitioned by
``_commit_id``): partition ``c`` holds one row per contract that commit ``c``
changed (its last effective event's order key, live flag and live image; a
``-D`` leaves a non-live row, the tombstone). A contract's state *as of before
commit b* is its row of the greatest ``_commit_id < b``. A batch is one
set-based pass:

1. the events left-join the stored state of their contracts (a semi-join of
   the state partitions ``< b`` with the batch's contract ids, then
   ``max_by(row, _commit_id)``);
2. ``-U`` -> ``before_image``; an event at or before the stored key -> ``stale``;
   the others are *effective*: within a batch they are applied in key order and
   each sets the state outright (upsert: live with its image; delete: not live),
   so the state an effective event sees is ``lag`` over the contract's
   effective events, the stored state for the first; outcome and changelog rows
   (``-U``/``+U``, ``+I``, ``-D``) follow from that and the event; the last
   effective event of each contract (``lead`` is NULL) is its new state row;
3. ``_seq`` is ``row_number`` over the commit's rows by (op_ts, file, line, n).

Cost of a commit: the window work and all writes follow the batch (events,
changelog rows, one state row per contract changed); the state read is one
columnar scan of the state partitions below the batch, filtered by the
batch's contracts before any shuffle (100 contracts looked up in an
834k-contract state: 7 s on this shared 2-core box), so it grows with the
number of contracts ever seen, not with the number of events. Compaction bounds the number of partitions: when
``COMPACT_AT_PARTITIONS`` (16) committed partitions lie below the batch, they
are folded into the newest of them (its latest rows, a fresh directory, one
metastore call) and the older ones dropped; the fold rewrites the state (one
row per contract), i.e. every 16 commits, amortised 1/16 of the state per
commit. Trade-off: contract-id buckets (one partition per hash bucket,
rewritten when touched) would make the read follow the touched buckets, but a
small batch of random contracts touches most buckets unless there are
thousands of them, each touched bucket costs a rewrite and a metastore call,
and the replay rule would need an old and a new row per contract; a scan with
no per-contract work was cheaper at the sizes measured. A backlog (first
build on a big landing folder) is one batch: one pass, whatever its size.

Crash safety
------------
Structured Streaming replays an uncommitted batch with the same
``batch_id`` and the same files; the stream itself is stateless (the state is
the table). A batch reads the state *as of before* its commit (partitions
``< batch_id``) and ignores any rows a killed attempt of the same batch
wrote, so a replay computes the same rows from the same inputs and never
applies an event twice; the state delta is published last, like the other
tables. Only one batch can be uncommitted at a time (batches run in order, the
next starts after the commit log records this one), and compaction only folds
committed partitions (``< batch_id``), so a replay never finds its input state
folded away. Each table's partition for a commit is
written as parquet into a fresh directory ``<table>/_commit_id=<id>/<uuid>``
and then published with one metastore call (the external catalog's
``createPartitions`` or ``alterPartitions``: ``python_udfs.jvm.point_partition``):
readers see the old partition or the new one, never a half-written one, and a
replay replaces rather than appends.
The timestamps ``_quarantined_at`` / ``_committed_at`` are the micro-batch's
timestamp recorded in the checkpoint's offset log, so a replay writes
identical rows. A replay leaves the directory written by the killed attempt
behind, unreferenced (deleting it could break a reader in flight).

A checkpoint written by the earlier ingest (state in a RocksDB state store
under ``<checkpoint>/state``) is refused when its state table does not exist
yet: starting it from an empty state would re-apply history wrongly.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Dict, List, Optional, Sequence
from urllib.parse import unquote, urlparse

from python_udfs.jvm import (
    external_catalog, jvm_class, kept, partition_values, point_partition, release, split_table_name,
)
from python_udfs.ingest.landed_lines import line_stream, numbered_lines, trim_space, whole_files

__all__ = [
    "run_contract_ingest",
    "landing_path",
    "CHANGELOG_DDL",
    "QUARANTINE_DDL",
    "INGEST_LOG_DDL",
    "STATE_DDL",
]

CHANGELOG_DDL = (
    "rowkind STRING, project_id BIGINT, contract_id BIGINT, sign_time TIMESTAMP_NTZ, "
    "amount DECIMAL(18,2), op_ts TIMESTAMP_NTZ, _seq BIGINT, _source_file STRING, "
    "_source_line BIGINT, _commit_id BIGINT"
)
QUARANTINE_DDL = (
    "reason STRING, raw_line STRING, _source_file STRING, _source_line BIGINT, "
    "_quarantined_at TIMESTAMP_NTZ, _commit_id BIGINT"
)
INGEST_LOG_DDL = (
    "files BIGINT, events_landed BIGINT, applied BIGINT, noop BIGINT, stale BIGINT, "
    "before_image BIGINT, quarantined BIGINT, _committed_at TIMESTAMP_NTZ, _commit_id BIGINT"
)

# Business times (sign_time, op_ts) are wall-clock values of the business time zone, kept as
# TIMESTAMP_NTZ: they read back exactly as landed whatever the JVM's, the session's or the
# reader's zone, and a local time that does not exist in a daylight-saving zone is kept as
# written. They travel through the state as microseconds since 1970-01-01 00:00:00 on that
# wall clock (zone-free arithmetic, no conversion to an instant).
_EPOCH_NTZ = "timestamp_ntz'1970-01-01 00:00:00'"


def parse_ntz(text, *formats):
    """The first of ``formats`` that parses ``text`` as a TIMESTAMP_NTZ, else NULL."""
    from pyspark.sql import functions as F

    # to_timestamp_ntz reads the wall clock as written whatever the session's zone and
    # timestampType (try_to_timestamp + cast would go through the zone in a session without
    # spark.sql.timestampType = TIMESTAMP_NTZ and move a local time inside a daylight-saving
    # gap by an hour). It raises on bad text under ANSI, so it only sees text that
    # try_to_timestamp (same pattern parser) accepts: CASE WHEN evaluates a branch only
    # when its condition holds.
    parsed = [F.when(F.try_to_timestamp(text, F.lit(f)).isNotNull(), F.to_timestamp_ntz(text, F.lit(f)))
              for f in formats]
    return parsed[0] if len(parsed) == 1 else F.coalesce(*parsed)


# The shapes of the contract stream's two formats (`yyyy-MM-dd HH:mm:ss`, optionally with 1-3
# fraction digits: Spark's `.SSS` pattern reads 1-3).
_SECONDS = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}"
WALL_CLOCK = _SECONDS + "$"
WALL_CLOCK_MS = _SECONDS + r"(\.[0-9]{1,3})?$"


def parse_wall_clock(text, shape: str):
    """``parse_ntz`` for the contract stream's fixed formats, ~4x cheaper: text of the
    ``shape`` (WALL_CLOCK or WALL_CLOCK_MS) cast to TIMESTAMP_NTZ (the cast checks the
    calendar: no Feb 30, no hour 24). Four pattern parses a line cost ~18 s per 1e6 lines
    (docs/benchmarks.md, eleventh session). Same results as ``parse_ntz`` with
    ``yyyy-MM-dd HH:mm:ss[.SSS]`` (test_contract_ingest_unit: the edge cases)."""
    from pyspark.sql import functions as F

    return F.when(text.rlike(shape), text.try_cast("timestamp_ntz"))


def ntz_micros(col):
    """Wall-clock microseconds of a TIMESTAMP_NTZ since 1970-01-01 00:00:00 (zone-free)."""
    from pyspark.sql import functions as F

    # From the wall-clock fields: timestampdiff normalises through the session zone, which
    # moves a local time inside a daylight-saving gap by an hour.
    days = F.datediff(F.to_date(col), F.lit("1970-01-01")).cast("bigint")
    seconds = days * 86400 + F.hour(col) * 3600 + F.minute(col) * 60
    return seconds * 1_000_000 + (F.date_part(F.lit("SECOND"), col) * 1_000_000).cast("bigint")


def ntz_from_micros(col):
    """Inverse of :func:`ntz_micros`."""
    from pyspark.sql import functions as F

    return F.timestamp_add("MICROSECOND", col, F.expr(_EPOCH_NTZ))


_OUTCOMES = ("applied", "noop", "stale", "before_image", "quarantined")
_ROWKINDS = ("+I", "-U", "+U", "-D")


def landing_path(home: str, stream: str = "contracts") -> str:
    """``<home>/landing/<stream>``: where a stream's JSON Lines files land."""
    return os.path.join(home, "landing", stream)


# --------------------------------------------------------------------------
# Tables and partitions
# --------------------------------------------------------------------------

def _quote_name(name: str) -> str:
    return ".".join("`" + part.strip("`").replace("`", "``") + "`" for part in name.split("."))


def _ensure_table(spark, table: str, ddl: str) -> str:
    """Create ``table`` if missing (parquet, partitioned by ``_commit_id``),
    check its columns, and return its location. A table that exists costs one metastore
    read (the external catalog's table entry: schema and location), not four statements."""
    from pyspark.sql.types import StructType, _parse_datatype_string

    database, name = split_table_name(spark, table)
    catalog = external_catalog(spark)
    if not catalog.tableExists(database, name):
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {_quote_name(database)}")
        spark.sql(f"CREATE TABLE IF NOT EXISTS {_quote_name(table)} ({ddl}) USING parquet "
                  "PARTITIONED BY (_commit_id)")
    entry = catalog.getTable(database, name)
    want = [(f.name, f.dataType.simpleString()) for f in _parse_datatype_string(ddl).fields]
    schema = StructType.fromJson(json.loads(entry.schema().json()))
    have = [(f.name, f.dataType.simpleString()) for f in schema.fields]
    if want != have:
        raise ValueError(f"table {table} exists with columns {have}, expected {want}")
    # the twin of the adapter's lakerank_table_location (python_udfs does not import the adapter)
    return str(jvm_class(spark, "org.apache.hadoop.fs.Path")(entry.location()).toString()).rstrip("/")


def _publish_partition(spark, table: str, location: str, commit_id: int, df) -> str:
    """Write ``df`` (without ``_commit_id``) into a fresh directory and point
    the table's partition ``_commit_id=commit_id`` at it in one metastore call."""
    target = f"{location}/_commit_id={commit_id}/{uuid.uuid4().hex}"
    df.write.mode("errorifexists").parquet(target)
    point_partition(spark, *split_table_name(spark, table), f"_commit_id={commit_id}", target)
    return target


def _is_local(path: str) -> bool:
    scheme = urlparse(path).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


def _local(path: str) -> str:
    return urlparse(path).path if path.startswith("file:") else path


def _mkdirs(spark, path: str) -> None:
    if _is_local(path):
        os.makedirs(_local(path), exist_ok=True)
        return
    jpath = jvm_class(spark, "org.apache.hadoop.fs.Path")(path)
    jpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).mkdirs(jpath)


def rename_relanded(landing_dir: str, checkpoint_dir: str) -> List[str]:
    """Give a new name to every landed file whose name the stream has already consumed but
    whose modification time is later than when it was consumed (content re-landed under an
    old name). Spark's file source remembers consumed paths (``<checkpoint>/sources/0``) and
    would skip such a file for good; renamed (``<stem>.relanded-<mtime ms><ext>``, one atomic
    rename in the landing folder) it is read as a new file. Local folders only; returns the
    new paths."""
    if not (_is_local(landing_dir) and _is_local(checkpoint_dir)):
        return []
    log_dir = os.path.join(_local(checkpoint_dir), "sources", "0")
    if not os.path.isdir(log_dir):
        return []
    consumed: Dict[str, int] = {}
    for name in os.listdir(log_dir):
        if name.startswith("."):
            continue
        with open(os.path.join(log_dir, name), encoding="utf-8") as fh:
            fh.readline()  # version line, "v1"
            for line in fh:
                if line.strip():
                    entry = json.loads(line)
                    path = os.path.normpath(unquote(urlparse(entry["path"]).path))  # a URI
                    consumed[path] = max(consumed.get(path, 0), int(entry["timestamp"]))
    renamed = []
    for folder, dirs, files in os.walk(_local(landing_dir)):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]  # hidden, as Spark lists
        for name in files:
            if name.startswith((".", "_")):
                continue
            path = os.path.normpath(os.path.join(folder, name))
            # whole milliseconds truncated, as Hadoop's local file system reports them (a float
            # st_mtime * 1000 can round up past the recorded value and re-read an unchanged file)
            mtime_ms = os.stat(path).st_mtime_ns // 1_000_000
            if path in consumed and mtime_ms > consumed[path]:
                stem, ext = os.path.splitext(name)
                target = os.path.join(folder, f"{stem}.relanded-{mtime_ms}{ext}")
                os.replace(path, target)
                renamed.append(target)
    return renamed


def _offset_log_timestamp_us(checkpoint_dir: str, batch_id: int) -> Optional[int]:
    """The batch timestamp Spark recorded in ``offsets/<batch_id>`` (the same on
    a replay), in microseconds; None when it cannot be read."""
    if not _is_local(checkpoint_dir):
        return None
    try:
        with open(os.path.join(_local(checkpoint_dir), "offsets", str(batch_id)), encoding="utf-8") as fh:
            fh.readline()  # version line, "v1"
            meta = json.loads(fh.readline())
        return int(meta["batchTimestampMs"]) * 1000
    except (OSError, ValueError, KeyError, TypeError):
        return None


def publish_quarantine_and_log(spark, parsed, *, commit_id: int, checkpoint_dir: str, batch_us,
                               stats: Dict[str, int], counts: Sequence[str], quarantine, ingest_log):
    """Publish a commit's side tables, both ingests alike: the ``quarantined`` rows of
    ``parsed`` (reason, raw line, lineage) into ``quarantine`` and one row of ``stats``'
    ``counts`` into ``ingest_log`` (each a ``(table, location)``), stamped with the batch's
    timestamp (``batch_us``, else the checkpoint's offset log, else now; stored as the
    business wall clock)."""
    import time

    from pyspark.sql import functions as F

    if batch_us is None:  # a batch of empty files only: no rows carry the timestamp
        batch_us = _offset_log_timestamp_us(checkpoint_dir, commit_id)
    if batch_us is None:
        batch_us = int(time.time() * 1_000_000)
    batch_ts = F.timestamp_micros(F.lit(int(batch_us))).cast("timestamp_ntz")
    if stats["quarantined"]:
        rows = (
            parsed.where(F.col("kind") == "quarantined")
            .select(
                F.col("reason"),
                F.col("raw").alias("raw_line"),
                F.col("file").alias("_source_file"),
                F.col("line").alias("_source_line"),
                batch_ts.alias("_quarantined_at"),
            )
            .repartition(1)
            .sortWithinPartitions("_source_file", "_source_line")
        )
        _publish_partition(spark, quarantine[0], quarantine[1], commit_id, rows)
    log = spark.range(1).select(
        *[F.lit(stats[n]).cast("bigint").alias(n) for n in counts], batch_ts.alias("_committed_at"))
    _publish_partition(spark, ingest_log[0], ingest_log[1], commit_id, log)


# --------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------

def _parse_lines(lines):
    """``lines`` (``landed_lines.numbered_lines``: file, line, n_events, text, batch_us; line 0
    = the file's marker) as one row per file (``kind`` 'file', ``n_events`` = its non-blank
    lines) and one per non-blank line (``kind`` 'E' for a valid event, 'quarantined' with a
    ``reason`` otherwise)."""
    from pyspark.sql import functions as F

    # VARIANT keeps JSON's own types: integer literals, exact decimals, strings, objects
    # (from_json with STRING fields would read 1.5, "1" and 1e3 alike, and numbers through a
    # double).
    lines = lines.withColumn("v", F.expr("try_parse_json(text)"))
    # Each field's value as a sub-variant, then its JSON text (to_json), then the values: a
    # field's JSON type is its text's first character and a string's content is the text
    # between the quotes unless it holds an escape. schema_of_variant and casts of variants
    # to string cost ~2.5 us a field and line, to_json ~0.5 us (docs/benchmarks.md, eleventh
    # session); the exact cast (try_variant_get as string) is kept for escapes and for the
    # quarantine messages, inside CASE branches that only bad lines reach. Separate
    # projections with non-trivial columns are not collapsed, so each value is computed once
    # per line (an expression repeated in later CASE branches would be evaluated again).
    fields = ("op", "contract_id", "project_id", "sign_time", "amount", "op_ts")
    keep = ("file", "line", "n_events", "text", "batch_us", "v")
    subs = lines.select(*keep, *[F.expr(f"variant_get(v, '$.{n}')").alias(f"x_{n}") for n in fields])
    typed = subs.select(*keep, *[f"x_{n}" for n in fields],
                        *[F.expr(f"to_json(x_{n})").alias(f"j_{n}") for n in fields])

    def jtext(name):  # the value's JSON text: NULL if absent, 'null' if JSON null
        return F.col(f"j_{name}")

    def jstr(name):  # a string's content, or the JSON text of another value (exact, slower)
        return F.expr(f"try_variant_get(x_{name}, '$', 'string')")

    def present(name):
        return jtext(name).isNotNull() & (jtext(name) != "null")

    def is_string(name):
        return jtext(name).startswith('"')

    def content(name):  # a JSON string's content
        text = jtext(name)
        return F.when(~text.contains("\\"), F.expr(f"substring(j_{name}, 2, length(j_{name}) - 2)")) \
            .otherwise(jstr(name))

    def as_int(name):  # a JSON integer literal that fits a bigint
        return F.when(jtext(name).rlike("^-?[0-9]+$"), F.expr(f"try_variant_get(x_{name}, '$', 'bigint')"))

    def shown(name):
        return F.concat(F.lit(f"bad {name} '"), F.substring(jstr(name), 1, 200), F.lit("'"))

    trimmed = trim_space(F.col("text"))
    strings = typed.select(
        "*",
        trimmed.startswith("{").alias("is_object"),
        trimmed.endswith("}").alias("closed"),
        *[F.when(is_string(n), content(n)).alias(f"c_{n}") for n in ("op", "sign_time", "op_ts")],
        # A JSON number's text or a string's content.
        F.when(is_string("amount"), content("amount")).otherwise(jtext("amount")).alias("c_amount"),
    )
    values = strings.select(
        "*",
        F.col("c_op").alias("op"),
        as_int("contract_id").alias("contract_id"),
        as_int("project_id").alias("project_id"),
        parse_wall_clock(F.col("c_sign_time"), WALL_CLOCK).alias("sign_time"),
        parse_wall_clock(F.col("c_op_ts"), WALL_CLOCK_MS).alias("op_ts"),
        # A JSON number or a string holding one; rounded half-up to 2 places
        # (Spark's cast); NULL if it does not fit decimal(18,2).
        trim_space(F.col("c_amount")).try_cast("decimal(18,2)").alias("amount"),
    )
    op = F.col("op")
    contract_id, project_id = F.col("contract_id"), F.col("project_id")
    sign_time, op_ts, amount = F.col("sign_time"), F.col("op_ts"), F.col("amount")
    needs_image = op.isin("+I", "+U", "-U")

    reason = (
        F.when(F.col("v").isNull(), F.lit("invalid json"))
        .when(~F.col("is_object"), F.lit("not a json object"))
        .when(~F.col("closed"), F.lit("invalid json"))  # trailing text after the object
        .when(~present("op"), F.lit("missing op"))
        .when(op.isNull() | ~op.isin(*_ROWKINDS),
              F.concat(F.lit("unknown op '"), F.substring(jstr("op"), 1, 200), F.lit("'")))
        .when(~present("contract_id"), F.lit("null contract_id"))
        .when(contract_id.isNull(), shown("contract_id"))
        .when(~present("op_ts"), F.lit("null op_ts"))
        .when(op_ts.isNull(), shown("op_ts"))
        .when(needs_image & ~present("project_id"), F.lit("null project_id"))
        .when(needs_image & project_id.isNull(), shown("project_id"))
        .when(needs_image & ~present("sign_time"), F.lit("null sign_time"))
        .when(needs_image & sign_time.isNull(), shown("sign_time"))
        .when(present("amount") & amount.isNull(), shown("amount"))
    )
    marker = F.col("line") == 0
    checked = values.withColumn("reason", F.when(~marker, reason))
    valid = ~marker & F.col("reason").isNull()
    return checked.select(
        F.when(marker, F.lit("file")).when(valid, F.lit("E")).otherwise(F.lit("quarantined")).alias("kind"),
        "file",
        "line",
        "n_events",
        "reason",
        F.col("text").alias("raw"),
        F.when(valid, contract_id).alias("contract_id"),
        F.when(valid, op).alias("op"),
        F.when(valid, project_id).alias("project_id"),
        F.when(valid, ntz_micros(sign_time)).alias("sign_us"),
        F.when(valid, amount.cast("string")).alias("amount"),
        F.when(valid, ntz_micros(op_ts)).alias("op_ts_us"),
        "batch_us",
    )


# --------------------------------------------------------------------------
# State table and the set-based state step
# --------------------------------------------------------------------------

# State rows: one per contract and commit that changed it (the order key of its last
# effective event, live flag, live image); partition ``_commit_id`` = the commit that wrote them.
STATE_DDL = (
    "contract_id BIGINT, op_ts_us BIGINT, file STRING, line BIGINT, live BOOLEAN, "
    "project_id BIGINT, sign_us BIGINT, amount DECIMAL(18,2), _commit_id BIGINT"
)
_STATE_COLS = ("op_ts_us", "file", "line", "live", "project_id", "sign_us", "amount")
# Fold the state's delta partitions into one when this many lie below the batch.
COMPACT_AT_PARTITIONS = 16


def _state_partitions(spark, table: str) -> List[int]:
    return sorted(int(v) for v in partition_values(spark, *split_table_name(spark, table), "_commit_id"))


def _latest_state(spark, table: str, below: int, contracts=None):
    """Each contract's state as of before commit ``below``: its row of the greatest
    ``_commit_id < below`` (rows of ``below`` and later — a killed attempt of this very
    batch — are ignored). With ``contracts`` (a DataFrame of contract_id), only those."""
    from pyspark.sql import functions as F

    rows = spark.table(_quote_name(table)).where(F.col("_commit_id") < F.lit(below))
    if contracts is not None:
        rows = rows.join(contracts, "contract_id", "left_semi")
    latest = rows.groupBy("contract_id").agg(
        F.max_by(F.struct(*_STATE_COLS), F.col("_commit_id")).alias("s"))
    return latest.select("contract_id", *[F.col(f"s.{c}").alias(c) for c in _STATE_COLS])


def _compact_state(spark, table: str, location: str, below: int) -> None:
    """Fold the committed state partitions ``< below`` into the newest of them when
    there are COMPACT_AT_PARTITIONS or more: write the merged latest rows into a fresh
    directory, re-point that partition at it (one metastore call), then drop the older
    partitions. Every step leaves a valid state: the merged partition holds each
    contract's latest row, so the older partitions are redundant for any later read.
    Only commits below the running batch are touched (they are committed and never replayed)."""
    older = [c for c in _state_partitions(spark, table) if c < below]
    if len(older) < COMPACT_AT_PARTITIONS:
        return
    head = older[-1]
    # One sorted file, whatever the size (its row count is not known without another pass).
    merged = _latest_state(spark, table, head + 1).repartition(1).sortWithinPartitions("contract_id")
    _publish_partition(spark, table, location, head, merged)
    specs = ", ".join(f"PARTITION (_commit_id={c})" for c in older[:-1])
    spark.sql(f"ALTER TABLE {_quote_name(table)} DROP IF EXISTS {specs}")


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


def _apply_events(events, state):
    """The state step, set-based: one row per valid event with its ``outcome``, the
    changelog rows it emits (``changes``: array of rowkind, n, image) and, on the
    contract's last effective event of the batch, the contract's new state (``is_last``).

    ``state``: the contracts' stored state (``_latest_state``). Per contract, with the
    order key (op_ts_us, file, line): a ``-U`` is a before image; an event at or before
    the stored key is stale; every other event is effective, and since the batch's
    effective events of a contract are applied in key order and each one sets the live
    flag and image (upsert: live, its image; delete: not live), the state an effective
    event sees is the one left by the previous effective event (``lag``) or, for the
    first, the stored one."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    s = state.select("contract_id", *[F.col(c).alias("s_" + c) for c in _STATE_COLS])
    j = events.join(s, "contract_id", "left")
    t, f, l = F.col("op_ts_us"), F.col("file"), F.col("line")
    st, sf, sl = F.col("s_op_ts_us"), F.col("s_file"), F.col("s_line")
    at_or_before = (t < st) | ((t == st) & ((f < sf) | ((f == sf) & (l <= sl))))
    op = F.col("op")
    stale = st.isNotNull() & at_or_before
    j = j.withColumn("outcome", F.when(op == "-U", F.lit("before_image"))
                     .when(stale, F.lit("stale")))

    w = Window.partitionBy("contract_id").orderBy("op_ts_us", "file", "line")
    first = F.lag("op").over(w).isNull()  # op is never NULL on a valid event
    image_cols = ("project_id", "sign_us", "amount")
    eff = j.where(F.col("outcome").isNull()).select(
        "*",
        F.when(first, F.coalesce(F.col("s_live"), F.lit(False)))
        .otherwise(F.lag("op").over(w).isin("+I", "+U")).alias("p_live"),
        *[F.when(first, F.col("s_" + c)).otherwise(F.lag(c).over(w)).alias("p_" + c)
          for c in image_cols],
        F.lead("op").over(w).isNull().alias("is_last"),
    )
    upsert = op.isin("+I", "+U")
    p_live = F.col("p_live")
    same = (p_live & (F.col("project_id") == F.col("p_project_id"))
            & (F.col("sign_us") == F.col("p_sign_us")) & F.col("amount").eqNullSafe(F.col("p_amount")))

    def row(kind, n, prefix):
        return F.struct(F.lit(kind).alias("rowkind"), F.lit(n).cast("bigint").alias("n"),
                        *[F.col(prefix + c).alias(c) for c in image_cols])

    no_rows = F.array().cast(
        "array<struct<rowkind:string,n:bigint,project_id:bigint,sign_us:bigint,amount:decimal(18,2)>>")
    eff = eff.select(
        "contract_id", "op", "op_ts_us", "file", "line", *image_cols, "is_last",
        F.when(upsert & same, F.lit("noop")).when(upsert | p_live, F.lit("applied"))
        .otherwise(F.lit("noop")).alias("outcome"),
        F.when(upsert & p_live & ~same, F.array(row("-U", 0, "p_"), row("+U", 1, "")))
        .when(upsert & ~p_live, F.array(row("+I", 0, "")))
        .when(~upsert & p_live, F.array(row("-D", 0, "p_")))
        .otherwise(no_rows).alias("changes"),
    )
    rest = j.where(F.col("outcome").isNotNull()).select(
        "contract_id", "op", "op_ts_us", "file", "line", *image_cols,
        F.lit(False).alias("is_last"), "outcome", no_rows.alias("changes"))
    return eff.unionByName(rest)


# --------------------------------------------------------------------------
# The job
# --------------------------------------------------------------------------

def run_contract_ingest(spark, *, landing_dir: str, checkpoint_dir: str, changelog_table: str,
                        quarantine_table: str, ingest_log_table: str, state_table: Optional[str] = None,
                        max_files_per_trigger: Optional[int] = None) -> str:
    """Consume every JSON Lines file under landing_dir not yet consumed (Structured Streaming,
    trigger(availableNow=True), checkpoint in checkpoint_dir), exactly once; returns a one-line summary.

    Creates the tables if missing (parquet, partitioned by ``_commit_id``; the per-contract
    state in ``state_table``, default ``<changelog_table>_state``), and the landing folder
    if missing (an empty stream). Each micro-batch is one commit ``_commit_id`` (the
    streaming batch id). See the module doc.
    """
    from pyspark.sql import functions as F

    state_table = state_table or f"{changelog_table}_state"
    if not spark.catalog.tableExists(state_table):
        _refuse_legacy_state(checkpoint_dir, state_table)
    locations = {
        "changelog": _ensure_table(spark, changelog_table, CHANGELOG_DDL),
        "quarantine": _ensure_table(spark, quarantine_table, QUARANTINE_DDL),
        "ingest_log": _ensure_table(spark, ingest_log_table, INGEST_LOG_DDL),
        "state": _ensure_table(spark, state_table, STATE_DDL),
    }
    _mkdirs(spark, landing_dir)
    rename_relanded(landing_dir, checkpoint_dir)

    output = line_stream(spark, landing_dir, max_files_per_trigger)

    stats_by_commit: Dict[int, Dict[str, int]] = {}

    def write_batch(batch_df, batch_id: int) -> None:
        commit_id = int(batch_id)
        kind = F.col("kind")
        parsed = kept(_parse_lines(numbered_lines(batch_df, whole_files(spark, checkpoint_dir, commit_id))).select(
            "kind", "file", "line", "n_events", "reason",
            F.when(kind == "quarantined", F.col("raw")).alias("raw"),
            "contract_id", "op", "project_id", "sign_us",
            F.col("amount").cast("decimal(18,2)").alias("amount"), "op_ts_us", "batch_us",
        ))
        out = None
        held: List = []  # frames kept for one write, released at the end
        try:
            agg = parsed.agg(
                F.count(F.when(kind == "file", 1)).alias("files"),
                F.coalesce(F.sum(F.when(kind == "file", F.col("n_events"))), F.lit(0)).alias("events_landed"),
                F.count(F.when(kind == "E", 1)).alias("events"),
                F.count(F.when(kind == "quarantined", 1)).alias("quarantined"),
                F.max("batch_us").alias("batch_us"),
            ).collect()[0]
            stats = {name: int(agg[name]) for name in ("files", "events_landed", "quarantined")}
            stats.update({o: 0 for o in _OUTCOMES if o != "quarantined"}, changes=0)

            if agg["events"]:
                # The state as of before this commit: a replay ignores what a killed attempt wrote.
                _compact_state(spark, state_table, locations["state"], commit_id)
                events = parsed.where(kind == "E").select(
                    "contract_id", "op", "op_ts_us", "file", "line", "project_id", "sign_us", "amount")
                state = _latest_state(spark, state_table, commit_id,
                                      events.select("contract_id").distinct())
                out = kept(_apply_events(events, state))
                counts = out.agg(
                    *[F.count(F.when(F.col("outcome") == o, 1)).alias(o)
                      for o in _OUTCOMES if o != "quarantined"],
                    F.coalesce(F.sum(F.size("changes")), F.lit(0)).alias("changes"),
                ).collect()[0]
                stats.update({name: int(counts[name]) for name in counts.asDict()})

            total = sum(stats[o] for o in _OUTCOMES)
            if stats["events_landed"] != total:
                raise RuntimeError(
                    f"contract ingest commit {commit_id}: counts do not reconcile: "
                    f"events_landed {stats['events_landed']} != " + " + ".join(
                        f"{o} {stats[o]}" for o in _OUTCOMES) + f" = {total}")
            publish_quarantine_and_log(
                spark, parsed, commit_id=commit_id, checkpoint_dir=checkpoint_dir, batch_us=agg["batch_us"],
                stats=stats, counts=("files", "events_landed") + _OUTCOMES,
                quarantine=(quarantine_table, locations["quarantine"]),
                ingest_log=(ingest_log_table, locations["ingest_log"]))

            if stats["changes"]:
                changes = (
                    out.where(F.size("changes") > 0)
                    .select("contract_id", "op_ts_us", "file", "line", F.inline("changes"))
                )
                changelog = numbered_in_order(
                    changes, ["op_ts_us", "file", "line", "n"], stats["changes"], "_seq", held).select(
                        F.col("rowkind"),
                        F.col("project_id"),
                        F.col("contract_id"),
                        ntz_from_micros(F.col("sign_us")).alias("sign_time"),
                        F.col("amount"),
                        ntz_from_micros(F.col("op_ts_us")).alias("op_ts"),
                        F.col("_seq"),
                        F.col("file").alias("_source_file"),
                        F.col("line").alias("_source_line"),
                )
                _publish_partition(spark, changelog_table, locations["changelog"], commit_id, changelog)

            if out is not None and stats["applied"] + stats["noop"]:
                live = F.col("op").isin("+I", "+U")
                delta = (
                    out.where("is_last")
                    .select(
                        "contract_id", "op_ts_us", "file", "line", live.alias("live"),
                        *[F.when(live, F.col(c)).alias(c) for c in ("project_id", "sign_us", "amount")],
                    )
                )
                delta = sorted_files(delta, ["contract_id"], stats["applied"] + stats["noop"])
                _publish_partition(spark, state_table, locations["state"], commit_id, delta)
            stats_by_commit[commit_id] = stats
        finally:
            for frame in [*held, out, parsed]:
                if frame is not None:
                    release(frame)

    _mkdirs(spark, checkpoint_dir)
    query = (
        output.writeStream.foreachBatch(write_batch)
        .option("checkpointLocation", checkpoint_dir)
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return _summary(stats_by_commit)


def _refuse_legacy_state(checkpoint_dir: str, state_table: str) -> None:
    """A checkpoint written by the earlier ingest keeps the per-contract state in its
    state store (``<checkpoint>/state``), which this ingest does not read: refuse rather
    than start from an empty state table."""
    if _is_local(checkpoint_dir) and os.path.isdir(os.path.join(_local(checkpoint_dir), "state")):
        raise RuntimeError(
            f"contract ingest: checkpoint {checkpoint_dir} holds per-contract state of the earlier "
            f"streaming-state ingest, but the state table {state_table} is new; rebuild this "
            "LAKERANK_HOME (fresh home, landing files copied over)")


def _summary(stats_by_commit: Dict[int, Dict[str, int]]) -> str:
    commits: List[int] = sorted(stats_by_commit)
    totals = {n: sum(s[n] for s in stats_by_commit.values()) for n in ("events_landed",) + _OUTCOMES}
    counts = (f"landed {totals['events_landed']}, applied {totals['applied']}, "
              f"noop {totals['noop']}, stale {totals['stale']}, "
              f"before_image {totals['before_image']}, quarantined {totals['quarantined']}")
    if not commits:
        return f"no new commits: {counts}"
    if len(commits) == 1:
        return f"commit {commits[0]}: {counts}"
    return f"commits {commits[0]}..{commits[-1]}: {counts}"
