{{ config(pre_hook=[
    "drop table if exists {{ this.incorporate(path={'identifier': this.identifier ~ '_prev'}) }}",
    "{{ naive_keep_previous() }}",
]) }}
{{ naive_rank(ref('naive_cl_contract_events')) }}
