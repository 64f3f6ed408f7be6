"""Exactly-once ingest of contract CDC events from JSON Lines files.

``run_contract_ingest`` consumes every file under a landing folder that an
earlier call has not consumed yet (Structured Streaming, ``availableNow``,
checkpoint in ``checkpoint_dir``), validates each line, applies the valid
events to per-contract state kept across calls (``applyInPandasWithState``)
and writes, per micro-batch (= commit ``_commit_id``), three tables:

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

Cost
----
``applyInPandasWithState`` pays about 1-1.5 ms of Python worker time per
contract touched per batch on this machine (pandas conversion of each group;
the state function itself is plain Python over one packed column), so a
batch costs in proportion to the contracts it touches, not to the history.

Crash safety
------------
Structured Streaming replays an uncommitted batch with the same
``batch_id`` and the same files, and the state function is deterministic, so
a replay produces the same rows. Each table's partition for a commit is
written as parquet into a fresh directory ``<table>/_commit_id=<id>/<uuid>``
and then published with one metastore call (``ADD PARTITION ... LOCATION``
or ``PARTITION ... SET LOCATION``): readers see the old partition or the new
one, never a half-written one, and a replay replaces rather than appends.
The timestamps ``_quarantined_at`` / ``_committed_at`` are the micro-batch's
timestamp recorded in the checkpoint's offset log, so a replay writes
identical rows. A replay leaves the directory written by the killed attempt
behind, unreferenced (deleting it could break a reader in flight).
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Dict, List, Optional
from urllib.parse import urlparse

__all__ = [
    "run_contract_ingest",
    "landing_path",
    "CHANGELOG_DDL",
    "QUARANTINE_DDL",
    "INGEST_LOG_DDL",
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

    # Parsed as an instant at offset +00:00 and read back as wall-clock microseconds: no
    # session zone is involved (a cast from TIMESTAMP would shift 02:30 on a spring-forward day).
    parsed = [ntz_from_micros(F.unix_micros(F.try_to_timestamp(F.concat(text, F.lit(" +0000")), F.lit(f + " Z"))))
              for f in formats]
    return parsed[0] if len(parsed) == 1 else F.coalesce(*parsed)


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


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _ensure_table(spark, table: str, ddl: str) -> str:
    """Create ``table`` if missing (parquet, partitioned by ``_commit_id``),
    check its columns, and return its location."""
    from pyspark.sql.types import _parse_datatype_string

    parts = table.split(".")
    if len(parts) > 1:
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {_quote_name('.'.join(parts[:-1]))}")
    qname = _quote_name(table)
    spark.sql(f"CREATE TABLE IF NOT EXISTS {qname} ({ddl}) USING parquet PARTITIONED BY (_commit_id)")
    want = [(f.name, f.dataType.simpleString()) for f in _parse_datatype_string(ddl).fields]
    have = [(f.name, f.dataType.simpleString()) for f in spark.table(qname).schema.fields]
    if want != have:
        raise ValueError(f"table {table} exists with columns {have}, expected {want}")
    location = None
    for row in spark.sql(f"DESCRIBE TABLE EXTENDED {qname}").collect():
        if (row[0] or "").strip() == "Location":
            location = (row[1] or "").strip()
    if not location:
        raise RuntimeError(f"cannot find the location of table {table}")
    return location.rstrip("/")


def _publish_partition(spark, table: str, location: str, commit_id: int, df) -> str:
    """Write ``df`` (without ``_commit_id``) into a fresh directory and point
    the table's partition ``_commit_id=commit_id`` at it in one metastore call."""
    target = f"{location}/_commit_id={commit_id}/{uuid.uuid4().hex}"
    df.write.mode("errorifexists").parquet(target)
    qname = _quote_name(table)
    exists = spark.sql(f"SHOW PARTITIONS {qname} PARTITION (_commit_id={commit_id})").count() > 0
    if exists:
        spark.sql(f"ALTER TABLE {qname} PARTITION (_commit_id={commit_id}) "
                  f"SET LOCATION {_sql_string(target)}")
    else:
        spark.sql(f"ALTER TABLE {qname} ADD PARTITION (_commit_id={commit_id}) "
                  f"LOCATION {_sql_string(target)}")
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
    jvm = spark.sparkContext._jvm
    jpath = jvm.org.apache.hadoop.fs.Path(path)
    jpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).mkdirs(jpath)


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


# --------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------

def _parsed_stream(spark, landing_dir: str, max_files_per_trigger: Optional[int]):
    """One row per file (``kind`` 'file', ``n_events`` = its non-blank lines)
    and one per non-blank line (``kind`` 'E' for a valid event, 'quarantined'
    with a ``reason`` otherwise)."""
    from pyspark.sql import functions as F

    reader = (
        spark.readStream.format("text")
        .option("wholetext", True)
        .option("recursiveFileLookup", True)
        # The default maxFileAge (7 days) silently skips a file whose
        # modification time is older than the newest seen file minus 7 days.
        .option("maxFileAge", "365000d")
    )
    if max_files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", int(max_files_per_trigger))
    files = reader.load(landing_dir).select(
        F.col("_metadata.file_path").alias("file"),
        F.split(F.col("value"), "\r\n|\r|\n").alias("lines"),
    )
    # Row 0 of a file is its marker (with the file's count of non-blank
    # lines), row k its line k. Everything is computed inside the one
    # generator expression: a column computed from the whole file next to
    # the exploded rows would be evaluated (or copied) once per line, which
    # is quadratic in the file's size.
    blank = r"(?U)^\s*$"  # (?U): Unicode white space
    numbered = F.concat(
        F.array(F.struct(
            F.lit(0).cast("bigint").alias("line"),
            F.lit(None).cast("string").alias("text"),
            F.size(F.filter("lines", lambda l: ~l.rlike(blank))).cast("bigint").alias("n_events"),
        )),
        F.transform("lines", lambda l, i: F.struct(
            (i + 1).cast("bigint").alias("line"),
            F.regexp_replace(l, "^\ufeff", "").alias("text"),  # a byte-order mark
            F.lit(0).cast("bigint").alias("n_events"),
        )),
    )
    lines = (
        files.select("file", F.inline(numbered))
        .where((F.col("line") == 0) | ~F.col("text").rlike(blank))
        # VARIANT keeps JSON's own types: integer literals, exact decimals,
        # strings, objects (from_json with STRING fields would read 1.5, "1"
        # and 1e3 alike, and numbers through a double).
        .withColumn("v", F.expr("try_parse_json(text)"))
    )

    def jtype(name):  # NULL if absent, 'VOID' if JSON null
        return F.expr(f"schema_of_variant(variant_get(v, '$.{name}'))")

    def jstr(name):  # a string's content, or the JSON text of another value
        return F.expr(f"try_variant_get(v, '$.{name}', 'string')")

    def present(name):
        return jtype(name).isNotNull() & (jtype(name) != "VOID")

    def is_int(name):
        return jtype(name).isin("TINYINT", "SMALLINT", "INT", "BIGINT")

    def as_int(name):
        return F.when(is_int(name), F.expr(f"variant_get(v, '$.{name}', 'bigint')"))

    def shown(name):
        return F.concat(F.lit(f"bad {name} '"), F.substring(jstr(name), 1, 200), F.lit("'"))

    trimmed = F.regexp_replace("text", r"^\s+|\s+$", "")
    op = F.when(jtype("op") == "STRING", jstr("op"))
    contract_id = as_int("contract_id")
    project_id = as_int("project_id")
    sign_time = F.when(jtype("sign_time") == "STRING", parse_ntz(jstr("sign_time"), "yyyy-MM-dd HH:mm:ss"))
    op_ts = F.when(jtype("op_ts") == "STRING",
                   parse_ntz(jstr("op_ts"), "yyyy-MM-dd HH:mm:ss.SSS", "yyyy-MM-dd HH:mm:ss"))
    # A JSON number or a string holding one; rounded half-up to 2 places
    # (Spark's cast); NULL if it does not fit decimal(18,2).
    amount = F.regexp_replace(jstr("amount"), r"^\s+|\s+$", "").try_cast("decimal(18,2)")
    needs_image = op.isin("+I", "+U", "-U")

    reason = (
        F.when(F.col("v").isNull(), F.lit("invalid json"))
        .when(~F.expr("schema_of_variant(v)").startswith("OBJECT"), F.lit("not a json object"))
        .when(~trimmed.endswith("}"), F.lit("invalid json"))  # trailing text after the object
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
    checked = lines.withColumn("reason", F.when(~marker, reason))
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
    )


# --------------------------------------------------------------------------
# State function
# --------------------------------------------------------------------------

# applyInPandasWithState pays per contract and per column (each group's
# columns are converted to pandas and concatenated one by one), so each
# event travels packed in one string and each output row comes back packed
# in one string: fields joined by NUL, the file path (free text, but never
# containing NUL) last.
_SEP = "\x00"
# In: k = contract_id, e = op_ts_us, line, op, project_id, sign_us, amount, file.
_STATE_OUT_SCHEMA = "kind STRING, p STRING"  # p: contract_id, project_id, sign_us, amount, op_ts_us, line, n, file
_STATE_SCHEMA = (
    "op_ts_us BIGINT, file STRING, line BIGINT, live BOOLEAN, project_id BIGINT, "
    "sign_us BIGINT, amount STRING"
)


def _make_state_function():
    """The ``applyInPandasWithState`` function. Built as a closure so that it
    is pickled by value: executors need not import this package.

    Per contract and batch: the batch's events sorted by (op_ts, file, line),
    each applied to the state left by earlier batches (see the module doc).
    Output: one ``(outcome, NULL)`` row per event plus its changelog rows
    ``(rowkind, packed image)``. Deterministic: the order key is unique."""

    sep = _SEP

    def apply_events(key, pdfs, state):
        import pandas as pd

        contract_id = int(key[0])
        events = []
        for pdf in pdfs:
            for e in pdf["e"].tolist():
                op_ts_us, line, op, pid, sign_us, amount, file = e.split(sep, 6)
                events.append((int(op_ts_us), file, int(line), op,
                               int(pid) if pid else 0, int(sign_us) if sign_us else 0,
                               amount or None))
        if not events:
            return
        events.sort(key=lambda ev: ev[:3])
        if state.exists:
            s = state.get
            last = (int(s[0]), s[1], int(s[2]))
            live = bool(s[3])
            image = (int(s[4]), int(s[5]), s[6]) if live else None
        else:
            last, live, image = None, False, None

        kinds, packed = [], []

        def change(rowkind, img, op_ts_us, file, line, n):
            kinds.append(rowkind)
            packed.append(sep.join((str(contract_id), str(img[0]), str(img[1]), img[2] or "",
                                    str(op_ts_us), str(line), str(n), file)))

        for op_ts_us, file, line, op, pid, sign_us, amount in events:
            order = (op_ts_us, file, line)
            if op == "-U":  # a before image never changes state, whatever its order
                outcome = "before_image"
            elif last is not None and order <= last:
                outcome = "stale"
            elif op == "+I" or op == "+U":
                new = (pid, sign_us, amount)
                if live and image == new:
                    outcome = "noop"
                elif live:
                    change("-U", image, op_ts_us, file, line, 0)
                    change("+U", new, op_ts_us, file, line, 1)
                    outcome = "applied"
                else:
                    change("+I", new, op_ts_us, file, line, 0)
                    outcome = "applied"
                live, image, last = True, new, order
            elif op == "-D":
                if live:
                    change("-D", image, op_ts_us, file, line, 0)
                    outcome = "applied"
                else:
                    outcome = "noop"  # a tombstone: the order key still advances
                live, image, last = False, None, order
            else:  # validated upstream
                raise RuntimeError(f"unexpected op {op!r}")
            kinds.append(outcome)
            packed.append(None)
        if last is not None:
            if live:
                state.update((last[0], last[1], last[2], True, image[0], image[1], image[2]))
            else:
                state.update((last[0], last[1], last[2], False, None, None, None))
        yield pd.DataFrame({"kind": kinds, "p": packed})

    return apply_events


def _output_stream(spark, landing_dir: str, max_files_per_trigger: Optional[int]):
    """The streaming DataFrame handed to foreachBatch: changelog rows, one
    outcome row per event, one marker row per file, with ``batch_us``."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    parsed = _parsed_stream(spark, landing_dir, max_files_per_trigger)
    text = lambda c: F.coalesce(F.col(c).cast("string"), F.lit(""))  # noqa: E731
    events = parsed.where(F.col("kind") == "E").select(
        F.col("contract_id").alias("k"),
        F.concat_ws(_SEP, text("op_ts_us"), text("line"), text("op"), text("project_id"),
                    text("sign_us"), text("amount"), text("file")).alias("e"),
    )
    applied = events.groupBy("k").applyInPandasWithState(
        _make_state_function(), _STATE_OUT_SCHEMA, _STATE_SCHEMA, "append",
        GroupStateTimeout.NoTimeout)
    p = F.split(F.col("p"), "\\x00", 8)
    from_state = applied.select(
        F.col("kind"),
        p[0].cast("bigint").alias("contract_id"),
        p[1].cast("bigint").alias("project_id"),
        p[2].cast("bigint").alias("sign_us"),
        F.when(p[3] != "", p[3]).alias("amount"),
        p[4].cast("bigint").alias("op_ts_us"),
        p[7].alias("file"),
        p[5].cast("bigint").alias("line"),
        p[6].cast("bigint").alias("n"),
        F.lit(None).cast("string").alias("reason"),
        F.lit(None).cast("string").alias("raw"),
    )
    # Markers and quarantined lines bypass the state function.
    passed = parsed.where(F.col("kind") != "E").select(
        "kind",
        F.lit(None).cast("bigint").alias("contract_id"),
        F.lit(None).cast("bigint").alias("project_id"),
        F.lit(None).cast("bigint").alias("sign_us"),
        F.lit(None).cast("string").alias("amount"),
        F.lit(None).cast("bigint").alias("op_ts_us"),
        "file",
        "line",
        F.col("n_events").alias("n"),
        "reason",
        F.when(F.col("kind") == "quarantined", F.col("raw")).alias("raw"),
    )
    # In a streaming plan current_timestamp() is the batch timestamp kept in
    # the offset log: a replayed batch gets the same value.
    return from_state.unionByName(passed).withColumn("batch_us", F.unix_micros(F.current_timestamp()))


# --------------------------------------------------------------------------
# The job
# --------------------------------------------------------------------------

def run_contract_ingest(spark, *, landing_dir: str, checkpoint_dir: str, changelog_table: str,
                        quarantine_table: str, ingest_log_table: str,
                        max_files_per_trigger: Optional[int] = None) -> str:
    """Consume every JSON Lines file under landing_dir not yet consumed (Structured Streaming,
    trigger(availableNow=True), checkpoint in checkpoint_dir), exactly once; returns a one-line summary.

    Creates the three tables if missing (parquet, partitioned by ``_commit_id``),
    and the landing folder if missing (an empty stream). Each micro-batch is
    one commit ``_commit_id`` (the streaming batch id). See the module doc.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    locations = {
        "changelog": _ensure_table(spark, changelog_table, CHANGELOG_DDL),
        "quarantine": _ensure_table(spark, quarantine_table, QUARANTINE_DDL),
        "ingest_log": _ensure_table(spark, ingest_log_table, INGEST_LOG_DDL),
    }
    _mkdirs(spark, landing_dir)

    output = _output_stream(spark, landing_dir, max_files_per_trigger)

    stats_by_commit: Dict[int, Dict[str, int]] = {}

    def write_batch(batch_df, batch_id: int) -> None:
        commit_id = int(batch_id)
        batch_df.persist()
        try:
            kind = F.col("kind")
            is_change = kind.isin(*_ROWKINDS)
            agg = batch_df.agg(
                F.count(F.when(kind == "file", 1)).alias("files"),
                F.coalesce(F.sum(F.when(kind == "file", F.col("n"))), F.lit(0)).alias("events_landed"),
                *[F.count(F.when(kind == o, 1)).alias(o) for o in _OUTCOMES],
                F.count(F.when(is_change, 1)).alias("changes"),
                F.max("batch_us").alias("batch_us"),
            ).collect()[0]
            stats = {name: int(agg[name]) for name in
                     ("files", "events_landed", "changes") + _OUTCOMES}
            total = sum(stats[o] for o in _OUTCOMES)
            if stats["events_landed"] != total:
                raise RuntimeError(
                    f"contract ingest commit {commit_id}: counts do not reconcile: "
                    f"events_landed {stats['events_landed']} != " + " + ".join(
                        f"{o} {stats[o]}" for o in _OUTCOMES) + f" = {total}")
            batch_us = agg["batch_us"]
            if batch_us is None:  # a batch of empty files only: no rows carry the timestamp
                batch_us = _offset_log_timestamp_us(checkpoint_dir, commit_id)
            if batch_us is None:
                import time
                batch_us = int(time.time() * 1_000_000)
            batch_ts = F.timestamp_micros(F.lit(int(batch_us))).cast("timestamp_ntz")  # business wall clock

            if stats["quarantined"]:
                quarantine = (
                    batch_df.where(kind == "quarantined")
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
                _publish_partition(spark, quarantine_table, locations["quarantine"], commit_id, quarantine)

            log = spark.range(1).select(
                *[F.lit(stats[n]).cast("bigint").alias(n) for n in ("files", "events_landed") + _OUTCOMES],
                batch_ts.alias("_committed_at"),
            )
            _publish_partition(spark, ingest_log_table, locations["ingest_log"], commit_id, log)

            if stats["changes"]:
                order = Window.orderBy("op_ts_us", "file", "line", "n")
                changelog = (
                    batch_df.where(is_change)
                    .select(
                        kind.alias("rowkind"),
                        F.col("project_id"),
                        F.col("contract_id"),
                        ntz_from_micros(F.col("sign_us")).alias("sign_time"),
                        F.col("amount").cast("decimal(18,2)").alias("amount"),
                        ntz_from_micros(F.col("op_ts_us")).alias("op_ts"),
                        F.row_number().over(order).cast("bigint").alias("_seq"),
                        F.col("file").alias("_source_file"),
                        F.col("line").alias("_source_line"),
                    )
                    .repartition(1)
                    .sortWithinPartitions("_seq")
                )
                _publish_partition(spark, changelog_table, locations["changelog"], commit_id, changelog)
            stats_by_commit[commit_id] = stats
        finally:
            batch_df.unpersist()

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
