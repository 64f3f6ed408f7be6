{#- The library's read macros under this project's name (`lakerank.<name>`, docs/design.md#interfaces): this
    project is named `lakerank`, the library is the package `lakerank_lib` (packages.yml), and
    each name here is the package's macro, unchanged. Models of this project may use either
    name; a project that installs only lakerank_lib uses `lakerank_lib.<name>`. -#}

{% macro audit_log() -%}{{ return(lakerank_lib.audit_log(*varargs, **kwargs)) }}{%- endmacro %}

{% macro changes() -%}{{ return(lakerank_lib.changes(*varargs, **kwargs)) }}{%- endmacro %}

{% macro as_of() -%}{{ return(lakerank_lib.as_of(*varargs, **kwargs)) }}{%- endmacro %}

{% macro snapshots() -%}{{ return(lakerank_lib.snapshots(*varargs, **kwargs)) }}{%- endmacro %}

{% macro zipper() -%}{{ return(lakerank_lib.zipper(*varargs, **kwargs)) }}{%- endmacro %}

{% macro as_of_join() -%}{{ return(lakerank_lib.as_of_join(*varargs, **kwargs)) }}{%- endmacro %}

{% macro bucket_of() -%}{{ return(lakerank_lib.bucket_of(*varargs, **kwargs)) }}{%- endmacro %}
