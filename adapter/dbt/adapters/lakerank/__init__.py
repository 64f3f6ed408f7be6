"""lakerank's dbt adapter plugin: dbt-spark plus in-process Python models.

Profiles say ``type: lakerank``. Everything else is dbt-spark; see ``impl.py``.
"""

from dbt.adapters.base import AdapterPlugin
from dbt.include import lakerank

from dbt.adapters.lakerank.connections import (
    LakerankConnectionManager,  # noqa: F401
    LakerankCredentials,
)
from dbt.adapters.lakerank.impl import LakerankAdapter

Plugin = AdapterPlugin(
    adapter=LakerankAdapter,  # type: ignore[arg-type]
    credentials=LakerankCredentials,
    include_path=lakerank.PACKAGE_PATH,
    dependencies=["spark"],
)
