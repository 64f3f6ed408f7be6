{{ config(materialized='incremental', incremental_strategy='append') }}
{{ naive_events() }}
