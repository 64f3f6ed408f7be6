"""The recorded Debezium streams of tests/fixtures/debezium_*/ (scripts/record_debezium.py):
their manifest, their lines, and Debezium's decimal encodings decoded independently of the
ingest (a test's expectations, never lakerank's code)."""

from __future__ import annotations

import base64
import datetime as _dt
import json
import pathlib
from decimal import ROUND_HALF_UP, Decimal

ROOT = pathlib.Path(__file__).resolve().parents[2]
PG = ROOT / "tests" / "fixtures" / "debezium_pg"
MYSQL = ROOT / "tests" / "fixtures" / "debezium_mysql"
FIXTURES = (PG, MYSQL)
VARIABLE_SCALE = "io.debezium.data.VariableScaleDecimal"
DECIMAL = "org.apache.kafka.connect.data.Decimal"


def manifest(fixture: pathlib.Path = PG) -> dict:
    return json.loads((fixture / "manifest.json").read_text())


def lines(fixture: pathlib.Path, name: str) -> list[str]:
    return (fixture / name).read_text().splitlines()


def message(line: str):
    """(schema, payload) of a line; (None, None) for a tombstone."""
    if line == "null":
        return None, None
    m = json.loads(line)
    return m.get("schema"), m.get("payload")


def field_schema(schema: dict, image: str, column: str) -> dict:
    """The schema of ``image``'s (``after``/``before``) ``column`` in an envelope's schema."""
    img = next(f for f in schema["fields"] if f["field"] == image)
    return next(f for f in img["fields"] if f["field"] == column)


def _unscaled(b64: str) -> int:
    return int.from_bytes(base64.b64decode(b64), "big", signed=True)


def amount(schema: dict, image: str, value) -> Decimal | None:
    """A Debezium ``amount`` as the exact decimal it encodes: ``VariableScaleDecimal``
    (``{"scale": s, "value": base64}``) or ``Decimal`` (base64, the scale a schema parameter),
    both the unscaled big-endian two's-complement integer."""
    if value is None:
        return None
    fs = field_schema(schema, image, "amount")
    if fs.get("name") == VARIABLE_SCALE:
        return Decimal(_unscaled(value["value"])).scaleb(-int(value["scale"]))
    if fs.get("name") == DECIMAL:
        return Decimal(_unscaled(value)).scaleb(-int(fs["parameters"]["scale"]))
    raise ValueError(f"amount of schema {fs}")


def position(payload: dict):
    """An event's position in its source's log: Postgres ``lsn``, MySQL's binlog (``file``,
    ``pos``, ``row``). A re-sent event has its original's; a snapshot's reads share one, and so
    do the delete and the create of a primary-key change (one log record)."""
    src = payload["source"]
    if src["connector"] == "postgresql":
        return (src["lsn"],)
    return (src["file"], src["pos"], src["row"])


def sign_time(schema: dict, image: str, value: int) -> str:
    """A Debezium ``sign_time`` (MicroTimestamp: Postgres ``timestamp``; Timestamp: MySQL
    ``DATETIME``) as the wall clock it encodes."""
    unit = {"io.debezium.time.MicroTimestamp": 1, "io.debezium.time.Timestamp": 1000}[
        field_schema(schema, image, "sign_time")["name"]]
    return (_dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=value * unit)).strftime("%Y-%m-%d %H:%M:%S")


def cents(value) -> str | None:
    """An amount as lakerank's decimal(18,2) holds it: rounded half-up (away from zero)."""
    if value is None:
        return None
    return str(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def expected(fixture: pathlib.Path, build: dict) -> dict:
    """A build point's expected rows by table: PostgreSQL's own answer."""
    return json.loads((fixture / build["expected"]).read_text())
