"""The source's own order of a CDC message (:mod:`python_udfs.ingest.cdc_formats`): the log
position a change was written at, so a change re-sent after a connector restart is known
for what it is (the same position as one already applied) and two changes with one change
time are ordered as the source wrote them (docs/cdc_formats.md, "The log's order").

A message's order is a pair of SQL strings over its VARIANT ``v`` (``env``: Debezium's
envelope, the ``payload`` of a wrapped message):

* ``src``: which log the position belongs to (``<connector>:<server name>`` for Debezium,
  ``maxwell:<server_id>``, ``canal``); positions are compared only within one ``src``;
* ``pos``: a text that sorts as the log does (its numbers zero-padded to 20 digits), or NULL
  when the message carries no position: the change time then orders, then arrival.

| format, connector | ``pos`` |
|---|---|
| Debezium Postgres | ``source.sequence`` (last commit LSN, LSN), else ``source.lsn`` |
| Debezium MySQL | ``source.file``, ``source.pos``, ``source.row`` |
| Debezium SQL Server | ``source.commit_lsn``, ``source.change_lsn``, ``source.event_serial_no`` |
| Debezium Oracle | ``source.commit_scn``, ``source.scn`` |
| Maxwell with ``position`` | its binlog file and offset, ``xoffset`` (the commit row: last) |
| Maxwell with ``xid`` only | ``ts``, ``xid``, ``xoffset`` (an xid is no log position: the time first) |
| Canal | ``es``, ``id`` (a message number, not a log position: the time first) |

The index of an event within its line (Canal's rows, an update's two events) is appended by
the caller, so every event of a message has a position of its own.
"""

from __future__ import annotations

__all__ = ["DEBEZIUM_ENVELOPE", "POSITIONS", "order_sql"]

_W = 20  # digits of a padded number (a bigint's 19 and a sign's room)


def _num(x: str) -> str:
    """A non-negative integer's text (SQL, from a JSON number or a string of digits) padded
    to sort as numbers do; NULL unless it is one."""
    t = f"coalesce(try_variant_get({x}, '$', 'string'), to_json({x}))"
    return f"CASE WHEN {t} RLIKE '^[0-9]{{1,{_W}}}$' THEN lpad({t}, {_W}, '0') END"


def _str(x: str) -> str:
    return f"try_variant_get({x}, '$', 'string')"


def _get(x: str, path: str) -> str:
    return f"variant_get({x}, '$.{path}')" if not path.startswith("[") else f"variant_get({x}, '${path}')"


_ZERO = f"lpad('', {_W}, '0')"


def _debezium(env: str) -> tuple:
    def f(name):
        return _get(env, f"source.{name}")

    connector = _str(f("connector"))
    # Postgres' sequence is the text of a JSON array of two strings (or nulls)
    seq = f"try_parse_json({_str(f('sequence'))})"
    pg_seq = f"concat(coalesce({_num(_get(seq, '[0]'))}, {_ZERO}), {_num(_get(seq, '[1]'))})"
    pg = f"coalesce({pg_seq}, concat({_ZERO}, {_num(f('lsn'))}))"
    mysql = f"concat({_str(f('file'))}, ':', {_num(f('pos'))}, ':', coalesce({_num(f('row'))}, {_ZERO}))"
    sqlserver = (f"concat({_str(f('commit_lsn'))}, ':', coalesce({_str(f('change_lsn'))}, ''), ':', "
                 f"coalesce({_num(f('event_serial_no'))}, {_ZERO}))")
    oracle = f"concat(coalesce({_num(f('commit_scn'))}, {_ZERO}), ':', {_num(f('scn'))})"
    pos = f"""CASE {connector}
        WHEN 'postgresql' THEN {pg}
        WHEN 'mysql' THEN {mysql}
        WHEN 'sqlserver' THEN {sqlserver}
        WHEN 'oracle' THEN {oracle}
    END"""
    src = f"concat_ws(':', {connector}, {_str(f('name'))})"
    return src, pos


def _maxwell(_env: str) -> tuple:
    position = _str(_get("v", "position"))
    file, offset = f"substring_index({position}, ':', 1)", f"substring_index({position}, ':', -1)"
    # the transaction's last row carries "commit": true and no xoffset: it sorts last
    xoffset = f"coalesce({_num(_get('v', 'xoffset'))}, repeat('9', {_W}))"
    by_position = (f"CASE WHEN {offset} RLIKE '^[0-9]{{1,{_W}}}$' AND {file} != {offset} "
                   f"THEN concat({file}, ':', lpad({offset}, {_W}, '0'), ':', {xoffset}) END")
    by_xid = f"concat({_num(_get('v', 'ts'))}, ':', {_num(_get('v', 'xid'))}, ':', {xoffset})"
    pos = f"coalesce({by_position}, {by_xid})"
    return f"concat_ws(':', 'maxwell', {_str(_get('v', 'server_id'))})", pos


def _canal(_env: str) -> tuple:
    pos = f"concat({_num(_get('v', 'es'))}, ':', {_num(_get('v', 'id'))})"
    return "'canal'", pos


POSITIONS = {"debezium-json": _debezium, "maxwell-json": _maxwell, "canal-json": _canal}


DEBEZIUM_ENVELOPE = "coalesce(variant_get(v, '$.payload'), v)"  # the payload of a wrapped message


def order_sql(fmt: str) -> tuple:
    """``(src, pos)``: the SQL of a ``fmt`` message's log and position (module doc); ``src``
    names the log of a message whose ``pos`` is not NULL (the caller keeps it only there)."""
    return POSITIONS[fmt](DEBEZIUM_ENVELOPE)
