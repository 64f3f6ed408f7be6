"""Python helpers of the lakerank project (importable by dbt Python models and executors)."""
