{{ naive_rank(ref('naive_contract_events')) }}
