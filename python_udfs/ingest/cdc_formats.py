"""CDC input formats of the contract stream (and, through :func:`change_events` with
``versions``, of the declared streams of :mod:`python_udfs.ingest.landing_ingest`): each
landed line of ``debezium-json``, ``canal-json`` or ``maxwell-json`` (the shapes of Flink's
formats of those names) as zero or more native events (``lakerank``: one event a line),
which the contract stream's parser and validator (:mod:`python_udfs.ingest.contract_lines`)
then check unchanged. docs/cdc_formats.md is the user's page.

Conversion (Spark column expressions over the line's VARIANT, then ``posexplode``)
-------------------------------------------------------------------------------------------
* debezium-json: ``op`` ``c``/``r`` -> ``+I`` of ``after``; ``u`` -> ``-U`` of ``before``,
  ``+U`` of ``after`` when ``before`` is a row image, else (``before`` null, or holding only
  the key: Postgres' default replica identity) ``+U`` of ``after`` alone, which the state
  applies as any ``+U``; ``d`` -> ``-D`` of ``before`` (the key is all it needs). A
  ``schema``/``payload`` wrapper is recognised by its ``payload`` field. ``op_ts`` =
  ``source.ts_ms``, or ``ts_ms`` when it has none.
* canal-json: ``type`` ``INSERT`` -> ``+I`` per row of ``data``; ``DELETE`` -> ``-D`` per
  row; ``UPDATE`` -> per row ``-U`` of the row with ``old[i]``'s fields over it, ``+U`` of
  the row. ``op_ts`` = ``es`` (the binlog time; ``ts`` is Canal's processing time). Values
  are strings: an integer's digits become a JSON integer for the id fields.
* maxwell-json: ``type`` ``insert``/``bootstrap-insert`` -> ``+I`` of ``data``; ``delete``
  -> ``-D``; ``update`` -> ``-U`` of ``data`` with ``old`` over it, ``+U`` of ``data``.
  ``op_ts`` = ``ts`` (seconds).

An update whose ``contract_id`` changes becomes ``-D`` of the old key and ``+I`` of the new.

Lines that are not data are skipped and counted (``skip``, never quarantined): Debezium
tombstones (a ``null`` line, ``{"schema":null,"payload":null}``), heartbeats, transaction
markers and schema-change events; Canal DDL (``isDdl`` true, except ``TRUNCATE``); Maxwell DDL
(``database-*``, ``table-*``) and bootstrap markers; so are other databases' and tables'
messages when the stream filters on them. Filters and change time (required, or arrival
order: the commit's batch time): :mod:`python_udfs.ingest.cdc_options`.

``op_ts`` (epoch milliseconds, an instant) is rendered as the business wall clock (the
session time zone, the profile's business zone), as the native ``op_ts``. ``sign_time``: a
string as written, or any Debezium time type (:mod:`python_udfs.ingest.cdc_times`).
``amount``: a JSON number or a string holding one.

Positions and accounting
------------------------
The events of a line keep its file and take the order position ``line * 2**SUB_BITS + i``
(``i``: the event's index within the line), so the state's order key ``(op_ts, file, line)``
orders them after the earlier lines, before the later ones and among themselves by their
index; the changelog's and the quarantine's ``_source_line`` is the physical line again
(:func:`physical_line`). Each file's ``n_events`` (``events_landed``) counts the events its
lines became: a Debezium update line 2 (1 without a before image), a Canal line of N rows N
(2N for an UPDATE), a malformed envelope 1 (one quarantined row, ``reason`` ``<format>: <what
is wrong>``), a skipped line 1. A
converted event the validator refuses is quarantined with ``<format> <image>: <reason>``
(e.g. ``canal-json data[1]: bad sign_time '...'``) and the raw landed line.
"""

from __future__ import annotations

from typing import Optional

from python_udfs.ingest.cdc_options import CdcOptions, cdc_options, filtered, how_to_declare
from python_udfs.ingest.cdc_positions import DEBEZIUM_ENVELOPE, order_sql
from python_udfs.ingest.cdc_times import MS_MAX, MS_MIN
from python_udfs.ingest.landed_lines import trim_space

__all__ = ["FORMATS", "SUB_BITS", "CdcOptions", "cdc_options", "change_events", "check_format",
           "physical_line"]

FORMATS = ("lakerank", "debezium-json", "canal-json", "maxwell-json")
SUB_BITS = 20  # events of one line: at most 2**20 - 1 (a larger line is quarantined)
_MAX_EVENTS = (1 << SUB_BITS) - 1


def check_format(fmt, what: str = "contracts format") -> str:
    """``fmt`` if it is a known format, else a ValueError (``unknown <what> '...'``) naming the
    allowed values."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown {what} {fmt!r}: allowed values are {', '.join(FORMATS)}")
    return fmt


def physical_line(col, fmt: str):
    """The physical line number of an order position ``col`` of format ``fmt``."""
    from pyspark.sql import functions as F

    return col if fmt == "lakerank" else F.shiftright(col, SUB_BITS)


def _is_object(x: str) -> str:
    return f"coalesce(startswith(to_json({x}), '{{'), false)"


def _present(x: str) -> str:
    return f"coalesce(to_json({x}), 'null') != 'null'"


def _shown(x: str) -> str:
    """``'<a string's content or another value's JSON text, 200 characters at most>'`` (SQL)."""
    return f"concat('''', substring(coalesce(try_variant_get({x}, '$', 'string'), to_json({x})), 1, 200), '''')"


def _int(x: str) -> str:
    """A JSON integer (or a string of digits) that fits a bigint, else NULL (SQL): a time must
    not be a decimal or a boolean, which the variant cast would read as 1."""
    return f"CASE WHEN to_json({x}) RLIKE '^\"?-?[0-9]{{1,18}}\"?$' THEN try_variant_get({x}, '$', 'bigint') END"


def _kind(x: str, name: str, allowed) -> str:
    """The quarantine reason of a change kind ``x`` (``op``, ``type``) that is missing or not
    one of ``allowed`` (SQL WHEN clauses)."""
    text = f"try_variant_get({x}, '$', 'string')"
    values = ", ".join(f"'{a}'" for a in allowed)
    return (f"WHEN NOT {_present(x)} THEN 'missing {name}' "
            f"WHEN {text} IS NULL OR {text} NOT IN ({values}) THEN concat('unknown {name} ', {_shown(x)})")


def _time(x: str, name: str, opts: CdcOptions) -> str:
    """The quarantine reason of a change time ``x`` that is missing or not an integer (SQL);
    none when the stream orders by arrival."""
    if opts.change_time == "arrival":
        return ""
    return (f"WHEN NOT {_present(x)} THEN 'missing {name}{how_to_declare(opts)}' "
            f"WHEN {_int(x)} IS NULL THEN concat('bad {name} ', {_shown(x)})")


_NULL_VARIANT = "cast(null as variant)"
_NULL_TYPES = "cast(null as array<variant>)"
_q = "'"  # a quote, inside f-string expressions


def _event(op: str, image: str, row: str, old: str = _NULL_VARIANT, err: str = "cast(null as string)",
           types: str = _NULL_TYPES):
    """One event (SQL struct): its op, the image's label, the row and, for a before image
    of Canal or Maxwell, the ``old`` values laid over the row; ``err`` a conversion error;
    ``types`` the row's field schemas of a Debezium schema wrapper (:func:`semantic_type`)."""
    return (f"named_struct('op', {op}, 'image', {image}, 'row', {row}, 'old', {old}, 'err', {err}, "
            f"'types', {types})")


def _key_changed(before_row: str, before_old: str, after_row: str) -> str:
    cid = "'$.contract_id'"
    before = f"coalesce(variant_get({before_old}, {cid}), variant_get({before_row}, {cid}))"
    return f"not (to_json({before}) <=> to_json(variant_get({after_row}, {cid})))"


def _update(before_row: str, before_old: str, after_row: str, before_image: str, after_image: str,
            err: str = "cast(null as string)", types: str = _NULL_TYPES) -> str:
    """The two events of an update (SQL array): ``-U``/``+U``, or ``-D``/``+I`` when the key changes."""
    changed = _key_changed(before_row, before_old, after_row)
    retract = _event(f"if({changed}, '-D', '-U')", before_image, before_row, before_old, err, types)
    add = _event(f"if({changed}, '+I', '+U')", after_image, after_row, err=err, types=types)
    return f"array({retract}, {add})"


def _debezium_skip(env: str) -> str:
    """Why a Debezium line is not data (SQL over ``v``, NULL for data): a tombstone, a
    heartbeat (``{"ts_ms": ...}``), a transaction marker (``status`` BEGIN/END) or a
    schema-change event (``ddl``, ``tableChanges``)."""
    payload = "variant_get(v, '$.payload')"
    return f"""CASE
        WHEN schema_of_variant(v) = 'VOID' THEN 'tombstone'
        WHEN {payload} IS NOT NULL AND to_json({payload}) = 'null' THEN 'tombstone'
        WHEN {_present(f"variant_get({env}, '$.op')")} THEN NULL
        WHEN try_variant_get(v, '$.schema.name', 'string') = 'io.debezium.connector.common.Heartbeat'
            OR schema_of_variant({env}) RLIKE '^OBJECT<ts_ms: [A-Z]+>$' THEN 'heartbeat'
        WHEN try_variant_get({env}, '$.status', 'string') IN ('BEGIN', 'END')
            AND {_present(f"variant_get({env}, '$.id')")} THEN 'transaction marker'
        WHEN {_present(f"variant_get({env}, '$.ddl')")} OR {_present(f"variant_get({env}, '$.tableChanges')")}
            THEN 'schema change'
    END"""


def _debezium_events(op: str, before: str, after: str, types: str, versions: bool) -> str:
    """The events of a Debezium line (SQL array). The contract stream: an update whose
    ``before`` is a row image (more than its key) is ``-U``/``+U`` (``-D``/``+I`` when the key
    changes), one without (``before`` null or only the key) is ``+U`` alone."""
    if versions:
        return f"""CASE {op}
            WHEN 'd' THEN array({_event("'d'", "'before'", before, types=types)})
            ELSE array({_event(f"if({op} = 'u', 'u', 'c')", "'after'", after, types=types)})
        END"""
    image = f"{_is_object(before)} AND {_present(f'variant_get({before}, {_q}$.project_id{_q})')}"
    key_changed = (f"{_present(f'variant_get({before}, {_q}$.contract_id{_q})')} AND "
                   f"{_key_changed(before, _NULL_VARIANT, after)}")
    return f"""CASE
        WHEN {op} = 'u' AND ({image} OR {key_changed})
            THEN {_update(before, _NULL_VARIANT, after, "'before'", "'after'", types=types)}
        WHEN {op} = 'u' THEN array({_event("'+U'", "'after'", after, types=types)})
        WHEN {op} = 'd' THEN array({_event("'-D'", "'before'", before, types=types)})
        ELSE array({_event("'+I'", "'after'", after, types=types)})
    END"""


def _debezium(versions: bool, opts: CdcOptions) -> dict:
    """The SQL (over ``v``) of a Debezium line: ``error`` (the envelope's), ``events``, ``ts``
    (epoch ms), ``skip`` and the database and table ``names``; ``versions``: the row images
    of a version stream (:func:`change_events`)."""
    env = DEBEZIUM_ENVELOPE
    op = f"try_variant_get({env}, '$.op', 'string')"
    before, after = f"variant_get({env}, '$.before')", f"variant_get({env}, '$.after')"
    source_ts, ts_ms = f"variant_get({env}, '$.source.ts_ms')", f"variant_get({env}, '$.ts_ms')"
    # source.ts_ms when there is one (a bad one is not replaced by ts_ms), else ts_ms
    when = _present(source_ts)
    ts = f"if({when}, {_int(source_ts)}, {_int(ts_ms)})"
    used = f"if({when}, {source_ts}, {ts_ms})"
    times = "" if opts.change_time == "arrival" else f"""
        WHEN {ts} IS NULL AND {when} THEN concat('bad source.ts_ms ', {_shown(used)})
        WHEN {ts} IS NULL AND NOT {_present(ts_ms)} THEN 'missing source.ts_ms and ts_ms{how_to_declare(opts)}'
        WHEN {ts} IS NULL THEN concat('bad ts_ms ', {_shown(used)})"""
    error = f"""CASE
        {_kind(f"variant_get({env}, '$.op')", "op", "crud")}
        WHEN {op} IN ('c', 'r', 'u') AND NOT {_is_object(after)} THEN concat('op ''', {op}, ''' without after')
        WHEN {op} = 'd' AND NOT {_is_object(before)} THEN 'op ''d'' without before'{times}
    END"""
    # the row's field schemas: the wrapper's before/after struct (one Value schema for both)
    types = ("try_variant_get(try_element_at(filter(try_variant_get(v, '$.schema.fields', 'array<variant>'), "
             "f -> try_variant_get(f, '$.field', 'string') IN ('after', 'before')), 1), '$.fields', 'array<variant>')")
    names = (f"try_variant_get({env}, '$.source.db', 'string')", f"try_variant_get({env}, '$.source.table', 'string')",
             "source.db", "source.table")
    return dict(error=error, events=_debezium_events(op, before, after, types, versions), ts=ts,
                skip=_debezium_skip(env), names=names)


def _canal(versions: bool, opts: CdcOptions) -> dict:
    """The SQL of a Canal line (as :func:`_debezium`)."""
    typ = "try_variant_get(v, '$.type', 'string')"
    data, old = "try_variant_get(v, '$.data', 'array<variant>')", "try_variant_get(v, '$.old', 'array<variant>')"
    rows = f"size({data})" if versions else f"size({data}) * if({typ} = 'UPDATE', 2, 1)"
    error = f"""CASE
        {_kind("variant_get(v, '$.type')", "type", ("INSERT", "UPDATE", "DELETE"))}
        WHEN NOT {_present("variant_get(v, '$.data')")} THEN 'missing data'
        WHEN {data} IS NULL THEN 'data is not an array'
        WHEN size({data}) = 0 THEN 'data is empty'
        WHEN {rows} > {_MAX_EVENTS} THEN concat('data has more than ', {_MAX_EVENTS}, ' events')
        WHEN {typ} = 'UPDATE' AND {old} IS NULL THEN 'UPDATE without an old array'
        WHEN {typ} = 'UPDATE' AND size({old}) != size({data})
            THEN concat('old has ', size({old}), ' rows, data ', size({data}))
        {_time("variant_get(v, '$.es')", "es", opts)}
    END"""
    # DDL (CREATE, ALTER, ERASE, QUERY, ...) is not data; a TRUNCATE deletes rows: not skipped
    skip = f"CASE WHEN try_variant_get(v, '$.isDdl', 'boolean') AND coalesce({typ}, '') != 'TRUNCATE' THEN 'DDL' END"
    out = dict(error=error, ts=_int("variant_get(v, '$.es')"), skip=skip, names=_NAMES)

    def err(x, name):  # a row that is not an object
        return f"if({_is_object(x)}, null, concat('{name}[', i, '] is not an object'))"

    label = "concat('data[', i, ']')"
    if versions:
        kind = f"CASE {typ} WHEN 'INSERT' THEN 'c' WHEN 'UPDATE' THEN 'u' ELSE 'd' END"
        return dict(out, events=f"transform({data}, (d, i) -> {_event(kind, label, 'd', err=err('d', 'data'))})")
    update = _update("d", f"{old}[i]", "d", f"concat({label}, ' before')", label,
                     f"coalesce({err('d', 'data')}, {err(f'{old}[i]', 'old')})")
    single = _event(f"if({typ} = 'DELETE', '-D', '+I')", label, "d", err=err("d", "data"))
    return dict(out, events=f"""CASE {typ}
        WHEN 'UPDATE' THEN flatten(transform({data}, (d, i) -> {update}))
        ELSE transform({data}, (d, i) -> {single})
    END""")


# Canal's and Maxwell's database and table fields (SQL over v, and their names).
_NAMES = ("try_variant_get(v, '$.database', 'string')", "try_variant_get(v, '$.table', 'string')",
          "database", "table")
_MAXWELL_SKIPPED = {"DDL": ("database-create", "database-alter", "database-drop", "table-create", "table-alter",
                            "table-drop"),
                    "bootstrap marker": ("bootstrap-start", "bootstrap-complete")}


def _maxwell(versions: bool, opts: CdcOptions) -> dict:
    """The SQL of a Maxwell line (as :func:`_debezium`)."""
    typ = "try_variant_get(v, '$.type', 'string')"
    data, old = "variant_get(v, '$.data')", "variant_get(v, '$.old')"
    error = f"""CASE
        {_kind("variant_get(v, '$.type')", "type", ("insert", "bootstrap-insert", "update", "delete"))}
        WHEN NOT {_is_object(data)} THEN 'data is not an object'
        WHEN {typ} = 'update' AND NOT {_is_object(old)} THEN 'update without an old object'
        {_time("variant_get(v, '$.ts')", "ts", opts)}
    END"""
    skip = "CASE " + " ".join(f"WHEN {typ} IN ({', '.join(repr(t) for t in types)}) THEN '{why}'"
                              for why, types in _MAXWELL_SKIPPED.items()) + " END"
    if versions:
        kind = f"CASE {typ} WHEN 'update' THEN 'u' WHEN 'delete' THEN 'd' ELSE 'c' END"
        events = "array(" + _event(kind, "'data'", data) + ")"
    else:
        events = f"""CASE {typ}
            WHEN 'update' THEN {_update(data, old, data, "'data before'", "'data'")}
            WHEN 'delete' THEN array({_event("'-D'", "'data'", data)})
            ELSE array({_event("'+I'", "'data'", data)})
        END"""
    ts = _int("variant_get(v, '$.ts')")
    return dict(error=error, events=events, ts=f"try_multiply({ts}, 1000)", skip=skip, names=_NAMES)


_TIME = {"debezium-json": "source.ts_ms", "canal-json": "es", "maxwell-json": "ts"}
_CONVERTERS = {"debezium-json": _debezium, "canal-json": _canal, "maxwell-json": _maxwell}


def change_events(lines, fmt: str, columns, versions: bool = False, opts: Optional[CdcOptions] = None,
                  positions: bool = False):
    """``lines`` (``landed_lines.numbered_lines``: file, line, n_events, text, batch_us; line 0
    = a file's marker) of format ``fmt`` as one row per event (and per malformed or skipped
    line): file, line (the order position, module doc), n_events (a marker's: the number of
    events of its file; 0 on the other rows), text (the landed line), batch_us, ``skip`` (why a
    line that is not data, or of another table, is skipped; NULL otherwise), then ``columns(e,
    ts_ms, bad)``'s ``(name, Column)`` pairs (NULL on the markers), computed from the event
    ``e`` (a struct: ``op``, ``image`` label, ``row``, ``old``, ``err``, ``types``; NULL for a
    malformed or skipped line), its change time ``ts_ms`` (epoch milliseconds; the batch time
    when ``opts`` orders by arrival) and ``bad`` (the quarantine reason of a malformed envelope
    or of a row that is not an object, ``<format>: ...``). ``versions``: the events of a
    version stream, one a changed row: ``op`` ``c`` (insert, snapshot read) or ``u`` with the
    new row, ``d`` with the old row (docs/examples.md); otherwise the contract stream's
    ``+I``/``-U``/``+U``/``-D`` (module doc). ``positions``: the rows also carry ``src`` and
    ``pos``, the event's log and position (:mod:`python_udfs.ingest.cdc_positions`; the
    event's index within its line appended; NULL without one, and when ordering by arrival),
    right after ``skip``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    opts = opts or CdcOptions()
    sql = _CONVERTERS[check_format(fmt)](versions, opts)
    text = F.col("text")
    trimmed = trim_space(text)
    is_object = trimmed.startswith("{") & trimmed.endswith("}")
    marker = F.col("line") == 0
    head = lines.where(~marker).select(
        "file", "line", "batch_us", "text", F.expr("try_parse_json(text)").alias("v"),
        is_object.alias("is_object"))
    arrival = opts.change_time == "arrival"
    ts = F.floor(F.col("batch_us") / 1000) if arrival else F.expr(sql["ts"])
    missing, other = filtered(sql["names"], opts)
    checked = head.withColumn("ts_ms", ts.cast("bigint")).withColumn(
        "skip", F.when(F.col("v").isNotNull(), F.coalesce(F.expr(sql["skip"]), other))).select(
        "*",
        F.when(F.col("skip").isNotNull(), F.lit(None))
        .when(F.col("v").isNull(), F.lit("invalid json"))
        .when(~F.col("is_object"), F.lit("not a json object"))
        .otherwise(F.coalesce(F.expr(sql["error"]), missing, F.when(
            ~F.col("ts_ms").between(MS_MIN, MS_MAX), F.lit(f"{_TIME[fmt]} out of range")))).alias("problem"),
    )
    good = F.col("problem").isNull() & F.col("skip").isNull()
    order = []
    if positions:
        src, pos = (F.lit(None).cast("string"),) * 2 if arrival else map(F.expr, order_sql(fmt))
        # the position first, computed once; a message without one has no log either
        checked = checked.withColumn("pos", F.when(good, pos)).withColumn("src", F.when(F.col("pos").isNotNull(), src))
        order = ["src", "pos"]
    exploded = checked.select(
        "file", "line", "batch_us", "text", "ts_ms", "skip", *order,
        F.when(F.col("problem").isNotNull(), F.concat(F.lit(f"{fmt}: "), F.col("problem"))).alias("bad"),
        F.posexplode_outer(F.when(good, F.expr(sql["events"]))).alias("i", "e"),
    )
    bad = F.coalesce(F.col("bad"), F.when(F.expr("e.err").isNotNull(), F.concat(F.lit(f"{fmt}: "), F.expr("e.err"))))
    converted = exploded.select(
        "file",
        (F.col("line") * (1 << SUB_BITS) + F.coalesce(F.col("i"), F.lit(0))).cast("bigint").alias("line"),
        F.lit(0).cast("bigint").alias("n_events"),
        "text",
        "batch_us",
        "skip",
        *([F.col("src"), F.concat(F.col("pos"), F.lit(":"), F.lpad(F.col("i").cast("string"), 7, "0")).alias("pos")]
          if positions else []),
        *[value.alias(name) for name, value in columns(F.col("e"), F.col("ts_ms"), bad)],
    )
    extra = converted.schema.fields[5:]
    markers = lines.where(marker).select(
        "file", "line", "n_events", "text", "batch_us", *[F.lit(None).cast(f.dataType).alias(f.name) for f in extra])
    both = converted.unionByName(markers)
    # A marker's n_events: the events its file's lines became (every row but the marker).
    per_file = Window.partitionBy("file")
    return both.withColumn("n_events", F.when(
        F.col("line") == 0, F.count(F.when(F.col("line") > 0, 1)).over(per_file)).otherwise(F.lit(0)).cast("bigint"))
