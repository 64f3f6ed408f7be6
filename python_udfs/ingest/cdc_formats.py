"""CDC input formats of the contract stream (and, through :func:`change_events` with
``versions``, of the declared streams of :mod:`python_udfs.ingest.landing_ingest`): each
landed line of ``debezium-json``, ``canal-json`` or ``maxwell-json`` (the shapes of Flink's
formats of those names) as zero or more native events (``lakerank``: one event a line),
which the contract stream's parser and validator (:mod:`python_udfs.ingest.contract_lines`)
then check unchanged. docs/cdc_formats.md is the user's page.

Conversion (Spark column expressions over the line's VARIANT, then ``posexplode``)
-------------------------------------------------------------------------------------------
* debezium-json: ``op`` ``c``/``r`` -> ``+I`` of ``after``; ``u`` -> ``-U`` of ``before``,
  ``+U`` of ``after``; ``d`` -> ``-D`` of ``before``. A ``schema``/``payload`` wrapper is
  recognised by its ``payload`` field. ``op_ts`` = ``source.ts_ms``, or ``ts_ms`` when it has none.
* canal-json: ``type`` ``INSERT`` -> ``+I`` per row of ``data``; ``DELETE`` -> ``-D`` per
  row; ``UPDATE`` -> per row ``-U`` of the row with ``old[i]``'s fields over it, ``+U`` of
  the row. ``op_ts`` = ``es`` (the binlog time; ``ts`` is Canal's processing time). Values
  are strings: an integer's digits become a JSON integer for the id fields.
* maxwell-json: ``type`` ``insert``/``bootstrap-insert`` -> ``+I`` of ``data``; ``delete``
  -> ``-D``; ``update`` -> ``-U`` of ``data`` with ``old`` over it, ``+U`` of ``data``.
  ``op_ts`` = ``ts`` (seconds).

An update whose ``contract_id`` changes becomes ``-D`` of the old key and ``+I`` of the new.
``op_ts`` (epoch milliseconds, an instant) is rendered as the business wall clock (the
session time zone, the profile's business zone), as the native ``op_ts``. ``sign_time``: a
JSON string is taken as written (``yyyy-MM-dd HH:mm:ss``); a JSON integer is epoch
milliseconds of the wall clock (Debezium's ``io.debezium.time.Timestamp``, MySQL
``DATETIME``), rendered zone-free. ``amount``: a JSON number or a string holding one.

Positions and accounting
------------------------
The events of a line keep its file and take the order position ``line * 2**SUB_BITS + i``
(``i``: the event's index within the line), so the state's order key ``(op_ts, file, line)``
orders them after the earlier lines, before the later ones and among themselves by their
index; the changelog's and the quarantine's ``_source_line`` is the physical line again
(:func:`physical_line`). Each file's ``n_events`` (``events_landed``) counts the events its
lines became: a Debezium update line 2, a Canal line of N rows N (2N for an UPDATE), a
malformed envelope 1 (one quarantined row, ``reason`` ``<format>: <what is wrong>``). A
converted event the validator refuses is quarantined with ``<format> <image>: <reason>``
(e.g. ``canal-json data[1]: bad sign_time '...'``) and the raw landed line.
"""

from __future__ import annotations

from python_udfs.ingest.landed_lines import trim_space

__all__ = ["FORMATS", "SUB_BITS", "change_events", "check_format", "physical_line", "to_native_events"]

FORMATS = ("lakerank", "debezium-json", "canal-json", "maxwell-json")
SUB_BITS = 20  # events of one line: at most 2**20 - 1 (a larger line is quarantined)
_MAX_EVENTS = (1 << SUB_BITS) - 1
_FIELDS = ("contract_id", "project_id", "sign_time", "amount")
# Epoch milliseconds Spark can turn into a timestamp (years 1..9999).
_MS_MIN, _MS_MAX = -62135596800000, 253402300799999


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
    return (f"WHEN coalesce(to_json({x}), 'null') = 'null' THEN 'missing {name}' "
            f"WHEN {text} IS NULL OR {text} NOT IN ({values}) THEN concat('unknown {name} ', {_shown(x)})")


def _time(x: str, name: str) -> str:
    """The quarantine reason of a change time ``x`` that is missing or not an integer (SQL)."""
    return (f"WHEN coalesce(to_json({x}), 'null') = 'null' THEN 'missing {name}' "
            f"WHEN {_int(x)} IS NULL THEN concat('bad {name} ', {_shown(x)})")


def _event(op: str, image: str, row: str, old: str = "cast(null as variant)", err: str = "cast(null as string)"):
    """One event (SQL struct): its op, the image's label, the row and, for a before image
    of Canal or Maxwell, the ``old`` values laid over the row; ``err`` a conversion error."""
    return (f"named_struct('op', {op}, 'image', {image}, 'row', {row}, 'old', {old}, 'err', {err})")


def _key_changed(before_row: str, before_old: str, after_row: str) -> str:
    cid = "'$.contract_id'"
    before = f"coalesce(variant_get({before_old}, {cid}), variant_get({before_row}, {cid}))"
    return f"not (to_json({before}) <=> to_json(variant_get({after_row}, {cid})))"


def _update(before_row: str, before_old: str, after_row: str, before_image: str, after_image: str,
            err: str = "cast(null as string)") -> str:
    """The two events of an update (SQL array): ``-U``/``+U``, or ``-D``/``+I`` when the key changes."""
    changed = _key_changed(before_row, before_old, after_row)
    retract = _event(f"if({changed}, '-D', '-U')", before_image, before_row, before_old, err)
    add = _event(f"if({changed}, '+I', '+U')", after_image, after_row, err=err)
    return f"array({retract}, {add})"


def _debezium(versions: bool = False):
    """(envelope error, events, op_ts epoch ms) of a Debezium line (SQL over ``v``);
    ``versions``: the row images of a version stream (:func:`change_events`)."""
    env = "coalesce(variant_get(v, '$.payload'), v)"
    op = f"try_variant_get({env}, '$.op', 'string')"
    before, after = f"variant_get({env}, '$.before')", f"variant_get({env}, '$.after')"
    source_ts, ts_ms = f"variant_get({env}, '$.source.ts_ms')", f"variant_get({env}, '$.ts_ms')"
    # source.ts_ms when there is one (a bad one is not replaced by ts_ms), else ts_ms
    when = f"coalesce(to_json({source_ts}), 'null') != 'null'"
    ts = f"if({when}, {_int(source_ts)}, {_int(ts_ms)})"
    used = f"if({when}, {source_ts}, {ts_ms})"
    error = f"""CASE
        {_kind(f"variant_get({env}, '$.op')", "op", "crud")}
        WHEN {op} IN ('c', 'r', 'u') AND NOT {_is_object(after)} THEN concat('op ''', {op}, ''' without after')
        WHEN {op} IN ('u', 'd') AND NOT {_is_object(before)} THEN concat('op ''', {op}, ''' without before')
        WHEN {ts} IS NULL AND {when} THEN concat('bad source.ts_ms ', {_shown(used)})
        WHEN {ts} IS NULL AND coalesce(to_json({ts_ms}), 'null') = 'null' THEN 'missing source.ts_ms and ts_ms'
        WHEN {ts} IS NULL THEN concat('bad ts_ms ', {_shown(used)})
    END"""
    if versions:
        events = f"""CASE {op}
            WHEN 'd' THEN array({_event("'d'", "'before'", before)})
            ELSE array({_event(f"if({op} = 'u', 'u', 'c')", "'after'", after)})
        END"""
    else:
        events = f"""CASE {op}
            WHEN 'u' THEN {_update(before, "cast(null as variant)", after, "'before'", "'after'")}
            WHEN 'd' THEN array({_event("'-D'", "'before'", before)})
            ELSE array({_event("'+I'", "'after'", after)})
        END"""
    return error, events, ts


def _canal(versions: bool = False):
    """(envelope error, events, op_ts epoch ms) of a Canal line (SQL over ``v``)."""
    typ = "try_variant_get(v, '$.type', 'string')"
    data, old = "try_variant_get(v, '$.data', 'array<variant>')", "try_variant_get(v, '$.old', 'array<variant>')"
    es = _int("variant_get(v, '$.es')")
    rows = f"size({data})" if versions else f"size({data}) * if({typ} = 'UPDATE', 2, 1)"
    error = f"""CASE
        {_kind("variant_get(v, '$.type')", "type", ("INSERT", "UPDATE", "DELETE"))}
        WHEN variant_get(v, '$.data') IS NULL OR to_json(variant_get(v, '$.data')) = 'null' THEN 'missing data'
        WHEN {data} IS NULL THEN 'data is not an array'
        WHEN size({data}) = 0 THEN 'data is empty'
        WHEN {rows} > {_MAX_EVENTS} THEN concat('data has more than ', {_MAX_EVENTS}, ' events')
        WHEN {typ} = 'UPDATE' AND {old} IS NULL THEN 'UPDATE without an old array'
        WHEN {typ} = 'UPDATE' AND size({old}) != size({data})
            THEN concat('old has ', size({old}), ' rows, data ', size({data}))
        {_time("variant_get(v, '$.es')", "es")}
    END"""

    def err(x, name):  # a row that is not an object
        return f"if({_is_object(x)}, null, concat('{name}[', i, '] is not an object'))"

    label = "concat('data[', i, ']')"
    if versions:
        kind = f"CASE {typ} WHEN 'INSERT' THEN 'c' WHEN 'UPDATE' THEN 'u' ELSE 'd' END"
        return error, f"transform({data}, (d, i) -> {_event(kind, label, 'd', err=err('d', 'data'))})", es
    update = _update("d", f"{old}[i]", "d", f"concat({label}, ' before')", label,
                     f"coalesce({err('d', 'data')}, {err(f'{old}[i]', 'old')})")
    single = _event(f"if({typ} = 'DELETE', '-D', '+I')", label, "d", err=err("d", "data"))
    events = f"""CASE {typ}
        WHEN 'UPDATE' THEN flatten(transform({data}, (d, i) -> {update}))
        ELSE transform({data}, (d, i) -> {single})
    END"""
    return error, events, es


def _maxwell(versions: bool = False):
    """(envelope error, events, op_ts epoch ms) of a Maxwell line (SQL over ``v``)."""
    typ = "try_variant_get(v, '$.type', 'string')"
    data, old = "variant_get(v, '$.data')", "variant_get(v, '$.old')"
    ts = _int("variant_get(v, '$.ts')")
    error = f"""CASE
        {_kind("variant_get(v, '$.type')", "type", ("insert", "bootstrap-insert", "update", "delete"))}
        WHEN NOT {_is_object(data)} THEN 'data is not an object'
        WHEN {typ} = 'update' AND NOT {_is_object(old)} THEN 'update without an old object'
        {_time("variant_get(v, '$.ts')", "ts")}
    END"""
    if versions:
        kind = f"CASE {typ} WHEN 'update' THEN 'u' WHEN 'delete' THEN 'd' ELSE 'c' END"
        events = "array(" + _event(kind, "'data'", data) + ")"
    else:
        events = f"""CASE {typ}
            WHEN 'update' THEN {_update(data, old, data, "'data before'", "'data'")}
            WHEN 'delete' THEN array({_event("'-D'", "'data'", data)})
            ELSE array({_event("'+I'", "'data'", data)})
        END"""
    return error, events, f"try_multiply({ts}, 1000)"


_TIME = {"debezium-json": "source.ts_ms", "canal-json": "es", "maxwell-json": "ts"}
_CONVERTERS = {"debezium-json": _debezium, "canal-json": _canal, "maxwell-json": _maxwell}


def _field(name: str, digit_strings: bool):
    """The native JSON text of field ``name`` of an exploded event ``e`` (SQL): the old
    value if the event has one for it, else the row's; ``null`` when absent."""
    x = f"coalesce(variant_get(e.old, '$.{name}'), variant_get(e.row, '$.{name}'))"
    j = f"to_json({x})"
    if name in ("contract_id", "project_id") and digit_strings:
        # Canal's values are strings: "1001" -> 1001 (other strings stay strings: refused).
        digits = f"substring({j}, 2, length({j}) - 2)"
        return f"coalesce(CASE WHEN {j} RLIKE '^\"-?[0-9]+\"$' THEN {digits} ELSE {j} END, 'null')"
    if name == "sign_time":
        # A JSON integer: epoch milliseconds of the wall clock (io.debezium.time.Timestamp).
        ms = f"try_variant_get({x}, '$', 'bigint')"
        wall = f"cast(timestampadd(MILLISECOND, {ms}, timestamp_ntz'1970-01-01 00:00:00') as string)"
        return (f"coalesce(CASE WHEN {j} RLIKE '^-?[0-9]+$' AND {ms} BETWEEN {_MS_MIN} AND {_MS_MAX} "
                f"THEN concat('\"', {wall}, '\"') ELSE {j} END, 'null')")
    return f"coalesce({j}, 'null')"


def change_events(lines, fmt: str, columns, versions: bool = False):
    """``lines`` (``landed_lines.numbered_lines``: file, line, n_events, text, batch_us; line 0
    = a file's marker) of format ``fmt`` as one row per event (and per malformed line): file,
    line (the order position, module doc), n_events (a marker's: the number of events of its
    file; 0 on the other rows), text (the landed line), batch_us, then ``columns(e, ts_ms,
    bad)``'s ``(name, Column)`` pairs (NULL on the markers), computed from the event ``e``
    (a struct: ``op``, ``image`` label, ``row``, ``old``, ``err``; NULL for a malformed
    line), its change time ``ts_ms`` (epoch milliseconds) and ``bad`` (the quarantine
    reason of a malformed envelope or of a row that is not an object, ``<format>: ...``).
    ``versions``: the events of a version stream, one a changed row: ``op`` ``c`` (insert,
    snapshot read) or ``u`` with the new row, ``d`` with the old row (docs/examples.md);
    otherwise the contract stream's ``+I``/``-U``/``+U``/``-D`` (module doc)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    error, events, ts = _CONVERTERS[check_format(fmt)](versions)
    text = F.col("text")
    trimmed = trim_space(text)
    is_object = trimmed.startswith("{") & trimmed.endswith("}")
    marker = F.col("line") == 0
    head = lines.where(~marker).select(
        "file", "line", "batch_us", "text", F.expr("try_parse_json(text)").alias("v"),
        is_object.alias("is_object"))
    checked = head.withColumn("ts_ms", F.expr(ts)).select(
        "*",
        F.when(F.col("v").isNull(), F.lit("invalid json"))
        .when(~F.col("is_object"), F.lit("not a json object"))
        .otherwise(F.coalesce(F.expr(error), F.when(
            ~F.col("ts_ms").between(_MS_MIN, _MS_MAX), F.lit(f"{_TIME[fmt]} out of range")))).alias("problem"),
    )
    good = F.col("problem").isNull()
    exploded = checked.select(
        "file", "line", "batch_us", "text", "ts_ms",
        F.when(~good, F.concat(F.lit(f"{fmt}: "), F.col("problem"))).alias("bad"),
        F.posexplode_outer(F.when(good, F.expr(events))).alias("i", "e"),
    )
    bad = F.coalesce(F.col("bad"), F.when(F.expr("e.err").isNotNull(), F.concat(F.lit(f"{fmt}: "), F.expr("e.err"))))
    converted = exploded.select(
        "file",
        (F.col("line") * (1 << SUB_BITS) + F.coalesce(F.col("i"), F.lit(0))).cast("bigint").alias("line"),
        F.lit(0).cast("bigint").alias("n_events"),
        "text",
        "batch_us",
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


def to_native_events(lines, fmt: str):
    """``lines`` (``landed_lines.numbered_lines``) of format ``fmt`` as the contract stream's
    events (:func:`change_events`) with ``native`` (the event as a native JSON line),
    ``origin`` (``<format> <image>``, the prefix of a validation reason) and ``bad`` (an
    envelope's quarantine reason)."""
    from pyspark.sql import functions as F

    def columns(e, ts_ms, bad):
        op_ts = F.timestamp_millis(ts_ms).cast("timestamp_ntz").cast("string")  # the business wall clock
        native = F.concat(
            F.lit('{"op":"'), e.op, F.lit('"'),
            *[F.concat(F.lit(f',"{n}":'), F.expr(_field(n, fmt == "canal-json"))) for n in _FIELDS],
            F.lit(',"op_ts":"'), op_ts, F.lit('"}'))
        return [("native", F.when(bad.isNull(), native)), ("origin", F.concat(F.lit(f"{fmt} "), e.image)),
                ("bad", bad)]

    return change_events(lines, fmt, columns)
