"""Wall-clock business times (TIMESTAMP_NTZ) of the landed streams: parsing and the
zone-free microsecond arithmetic the contract state uses."""

from __future__ import annotations

__all__ = ["WALL_CLOCK", "WALL_CLOCK_MS", "ntz_from_micros", "ntz_micros", "parse_ntz", "parse_wall_clock"]

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
    calendar: no Feb 30, no hour 24), where four pattern parses a line were a large part
    of the ingest's time (docs/benchmarks.md). Same results as ``parse_ntz`` with
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

