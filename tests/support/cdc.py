"""CDC test support for lakerank: the event model (:mod:`cdc_events`), a generator of landed
batches (:mod:`cdc_generator`) and an independent oracle (:mod:`cdc_oracle`). Pure Python +
pandas + DuckDB; no Spark. Import as ``cdc`` with ``tests/support`` on sys.path."""

from cdc_events import *  # noqa: F403
from cdc_events import __all__ as _events
from cdc_generator import BAD_KINDS, REQUIRED_CASES, GeneratedLine, generate_batches, generate_labeled_batches
from cdc_oracle import Oracle

__all__ = [*_events, "BAD_KINDS", "REQUIRED_CASES", "GeneratedLine", "generate_batches", "generate_labeled_batches",
           "Oracle"]
