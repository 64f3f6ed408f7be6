{#- Fault injection for lakerank's own crash and write-failure tests (tests/functional). A test-only
    hook: the var `lakerank_fault` is refused unless the environment sets LAKERANK_TEST_HOOKS=1
    (tests/conftest.py does), so a stray var can never stop or break a real build. -#}


{#- Write-failure injection for tests: `lakerank_fault: "write:<part>"` (or per model, as
    below) makes this model's parquet write whose location contains <part> fail like a full
    disk, leaving a torn file behind (adapter.lakerank_write_dirs). -#}
{% macro _write_fault() -%}
  {%- set fault = lakerank_lib._model_fault() -%}
  {{ return(fault if fault is string and fault.startswith('write:') else '') }}
{%- endmacro %}


{#- This model's `lakerank_fault` value (a plain value applies to every model). -#}
{% macro _model_fault() -%}
  {#- the var, or the environment's LAKERANK_FAULT (JSON or a plain value): a crash test's
      processes then keep dbt's partial parse (a changed var re-parses the project) -#}
  {%- set fault = var('lakerank_fault', '') or env_var('LAKERANK_FAULT', '') -%}
  {%- if fault is string and fault.startswith('{') -%}{%- set fault = fromjson(fault) -%}{%- endif -%}
  {%- if fault and env_var('LAKERANK_TEST_HOOKS', '') != '1' -%}
    {{ exceptions.raise_compiler_error("var lakerank_fault is a hook of lakerank's own tests (it stops or breaks"
         ~ " commits on purpose) and needs LAKERANK_TEST_HOOKS=1 in the environment; drop the var") }}
  {%- endif -%}
  {%- if fault is mapping -%}{%- set fault = fault.get(this.name, '') -%}{%- endif -%}
  {{ return(fault) }}
{%- endmacro %}


{#- Crash injection for tests: `--vars '{lakerank_fault: swapped}'` stops the run right
    after that step (an error), leaving the tables as a killed process would. A mapping
    (`{lakerank_fault: {model_a: logged, model_b: swapped}}`) stops each named model at its own
    step, so one run can crash several commits. `kill:<step>` instead SIGKILLs the dbt
    process and its JVM there (a dbt process a test started in its own process group), and
    `stop:<step>` SIGSTOPs the dbt process alone until the test sends SIGCONT (a paused
    writer: its lease runs out meanwhile).
    Steps: pk_table staged, logged, planned, swapped, recorded; merge_on_read written,
    committed, viewed, compacted; stream_ingest ingested; publication viewed, published
    (and any a project's own macro declares with fault_point). -#}
{% macro fault_point(name) -%}
  {%- set fault = lakerank_lib._model_fault() -%}
  {%- if fault == 'kill:' ~ name -%}
    {% do adapter.lakerank_test_kill(this ~ ' ' ~ name) %}
  {%- endif -%}
  {%- if fault == 'stop:' ~ name -%}
    {% do adapter.lakerank_test_kill(this ~ ' ' ~ name, 'stop') %}
  {%- endif -%}
  {%- if fault == name -%}
    {{ exceptions.raise_compiler_error("lakerank_fault: stopped after step '" ~ name ~ "'") }}
  {%- endif -%}
{%- endmacro %}
