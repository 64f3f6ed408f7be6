"""The bench's markdown tables (scripts/bench.py): per size, the history load, the floors and
the build with nothing landed; per batch, seconds above the floor and the ratios against the
yardstick's lines, then the dbt nodes, statements, Spark jobs and bytes read of every run."""

from __future__ import annotations


def _history(r: dict) -> str:
    return f"{r['history']:,}" + (" (shared)" if r.get("deployment") == "shared" else "")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f}"


def _above(seconds: float, floor: float) -> float:
    return round(seconds - floor, 2)


def _floors(r: dict) -> tuple:
    """A cold run's floors, lakerank's and the yardstick's: the smallest sample of each."""
    f = r["floor"]
    own = f.get("samples", [f["seconds"]])  # a run before the yardstick's own JVM: one floor for both
    return min(own), min(f.get("yardstick_samples", [f["yardstick"]] if "yardstick" in f else own))


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b > 1 else "n/a (within 1 s of the floor)"


def _tables(rows: list[tuple[str, int, tuple, dict, dict, bool]], labels: dict) -> list[str]:
    """Seconds above the floor (lakerank's, the yardstick's) and ratios, then the counts, one line per batch."""
    lines = list(labels)
    out = ["| history | batch | floors s | lakerank s | " + " | ".join(f"{labels[k]} s" for k in lines)
           + " | **lakerank / columnar** | " + " | ".join(f"lakerank / {labels[k]}" for k in lines if k != "columnar")
           + " | load | exact |",
           "|---" * (6 + 2 * len(lines)) + "|"]
    for hist, b, (f, yf), inc, naive, exact in rows:
        li = _above(inc["seconds"], f)
        nv = {k: _above(naive[k]["seconds"], yf) for k in lines}
        out.append(f"| {hist} | {b} | {f} / {yf} | {li} | " + " | ".join(str(nv[k]) for k in lines)
                   + f" | **{_ratio(li, nv['columnar'])}** | "
                   + " | ".join(_ratio(li, nv[k]) for k in lines if k != "columnar")
                   + f" | {inc.get('load', 0):.2f} | {exact} |")
    out += ["", "| history | batch | run | nodes run (with statements) | statements | Spark jobs | MB read |",
            "|---|---|---|---|---|---|---|"]
    for hist, b, _, inc, naive, _ in rows:
        for label, r in [("lakerank", inc)] + [(labels[k], naive[k]) for k in lines]:
            out.append(f"| {hist} | {b} | {label} | {r['nodes']} ({r['nodes_with_statements']}) | {r['statements']}"
                       f" | {r['spark_jobs']} | {r['bytes_read'] / 1e6:.1f} |")
    return out


def summary(results: list[dict], batch_events: int, labels: dict) -> str:
    """The tables; ``labels``: each yardstick line's key and label, in order."""
    labels = {k: v for k, v in labels.items() if all(k in b["naive"] for r in results for b in r["batches"])}
    out = ["| history | load s | load peak RSS MiB | yardstick's first runs s | floors s | empty build s"
           " | MB written a batch | exact vs DuckDB |",
           "|---|---|---|---|---|---|---|---|"]
    for r in results:
        first = r.get("naive_load") or {}
        out.append(f"| {_history(r)} | {r['load']['seconds']} | {r['load']['peak_rss_mib']}"
                   f" | {' / '.join(str(v['seconds']) for v in first.values()) or '-'}"
                   f" | {' / '.join(map(str, _floors(r)))} | {r['empty_build']['seconds']}"
                   f" | {' / '.join(_mb(b['incremental']['bytes_written']) for b in r['batches'])}"
                   f" | {r['exact']['exact']} |")
    out += [f"\nCold: batches of {batch_events:,} events, every `dbt` a fresh process; seconds above the"
            " floor (the run's smallest `dbt show --inline 'select 1'`: lakerank's / the yardstick's JVM).\n"]
    rows = []
    for r in results:
        rows += [(_history(r), b["batch"], _floors(r), b["incremental"], b["naive"], r["exact"]["exact"])
                 for b in r["batches"]]
    out += _tables(rows, labels)
    warm = [r for r in results if r.get("warm")]
    if warm:
        out += ["\nWarm: the same homes behind `lakerank serve`, every `dbt ... --target connect` (lakerank and"
                " the yardstick through the same server); seconds above the warm floor.\n",
                "| history | server start s | floor s | empty build s |", "|---|---|---|---|"]
        out += [f"| {_history(r)} | {r['warm']['server_start']} | {r['warm']['floor']}"
                f" | {r['warm']['empty_build']['seconds']} |" for r in warm]
        out.append("")
        rows = [(_history(r), b["batch"], (r["warm"]["floor"],) * 2, b["incremental"], b["naive"], r["exact"]["exact"])
                for r in warm for b in r["warm"]["batches"]]
        out += _tables(rows, labels)
    return "\n".join(out)
