"""`python -m benchmarks.herd [--quick]`: the herd table (stdout, Markdown) and the plots in docs/fleet/."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, replace
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from benchmarks.herd.sim import STRATEGIES, Params, Result, run

OUT = Path(__file__).resolve().parents[2] / "docs" / "fleet"
plt.rcParams["svg.hashsalt"] = "toolproof-herd"  # stable ids: the same run writes the same files
plt.rcParams["svg.fonttype"] = "none"


def table(rows: list[dict[str, object]]) -> str:
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join("-" if r[h] is None else str(r[h]) for h in head) + " |" for r in rows]
    return "\n".join(lines)


def plot_load(results: list[Result], path: Path) -> None:
    p = results[0].params
    capacity = p.agents / p.think_s * p.headroom
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for r in results:
        ax.plot(r.per_second(r.sent) / capacity, label=r.strategy, linewidth=1.2)
    ax.axvspan(p.outage_at, p.outage_at + p.outage_s, color="0.9", label="upstream down")
    ax.axhline(1.0, color="0.4", linestyle=":", linewidth=1)
    ax.set(xlabel="seconds", ylabel="upstream requests / capacity",
           title=f"{p.agents:,} agents, {p.per_process} per process, outage {p.outage_s:.0f} s, seed {p.seed}")
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def plot_waste(rows: list[dict[str, object]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for strategy in STRATEGIES:
        mine = [r for r in rows if r["strategy"] == strategy]
        ax.plot([r["agents"] for r in mine], [r["wasted_per_agent"] for r in mine], marker="o", label=strategy)
    ax.set(xscale="log", xlabel="agents", ylabel="failed upstream calls per agent", title="Wasted calls")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 agents only")
    args = parser.parse_args()
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    base = Params()
    rows, by_size = [], {}
    for agents in sizes:
        results = [run(s, replace(base, agents=agents)) for s in STRATEGIES]
        by_size[agents] = results
        rows += [r.summary() for r in results]
    OUT.mkdir(parents=True, exist_ok=True)
    plot_load(by_size[10_000], OUT / "herd-load-10k.svg")
    plot_waste(rows, OUT / "herd-waste.svg")
    (OUT / "herd.json").write_text(json.dumps({"params": asdict(base), "rows": rows}, indent=1) + "\n")
    print(f"params (agents varies): {asdict(base)}\n")
    print(table(rows))


if __name__ == "__main__":
    main()
