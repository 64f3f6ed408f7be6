"""The build lease's values and the writer ids of stages (python_udfs/commit/lease.py); the
lease against the real metastore is tests/functional/test_shared_deployment.py's."""

from __future__ import annotations

from python_udfs.commit import lease, protocol


def test_a_lease_value_round_trips_and_free_or_released_holds_nothing():
    held = lease.Lease("w0123abcd", "host pid 1", 3, 5, 60.0)
    assert lease.parse(held.value()) == held
    assert lease.parse(lease.FREE) is None and lease.parse(None) is None and lease.parse("{not json") is None
    released = lease._released(held)
    assert lease.parse(released) is None
    assert lease._lease_of(released).epoch == 3  # the next holder's epoch is higher


def test_stage_names_carry_the_writer_only_while_a_lease_is_held():
    assert lease.held() is None
    assert protocol.stage_dir("s3a://b/t", "c", 7, "1a2b3c4d") == "s3a://b/t/_v/c7_1a2b3c4d"
    lease._STATE.lease = lease.Lease(lease.WRITER, "host pid 1", 1, 0, 60.0)
    try:
        name = protocol.stage_dir("s3a://b/t", "c", 7, "1a2b3c4d").rsplit("/", 1)[1]
        assert name == f"c7_1a2b3c4d-{lease.WRITER}" and lease.writer_of(name) == lease.WRITER
    finally:
        lease._STATE.lease = None
    assert lease.writer_of("c7_1a2b3c4d") is None and lease.writer_of("i3_0123456789ab") is None


def test_without_a_lease_no_writer_is_live_and_nothing_is_lost():
    alive = lease.live_other(spark=None)  # no lease held: no metastore read
    assert not alive("w0123abcd") and not alive(None)
    lease.check()
    lease.confirm(spark=None)
