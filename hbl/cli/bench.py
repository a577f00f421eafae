"""hbl bench: the simulator's speed on this machine, and the int16 network's agreement with FP32."""
from hbl.cmdline import print_json, whole


def add_parsers(sub):
    """hbl bench."""
    b = sub.add_parser("bench", help="simulator throughput per policy on this machine",
                       description="Simulator throughput (requests/s) per policy on a synthetic zipf trace.")
    b.add_argument("--requests", type=whole(1, 1 << 32), default=1_000_000, help="trace length (default 1000000)")
    b.add_argument("--policies", help="comma-separated policies (default: all)")
    b.add_argument("--repeat", type=whole(1, 1000), default=3, help="runs per policy, best kept (default 3)")
    b.add_argument("--json", action="store_true", help="print the figures as JSON")
    b.add_argument("--agreement", action="store_true",
                   help="instead: how often the int16 inference network's greedy action is the FP32 network's, "
                        "over real runs of the learned policies (--policies, default harmonia,sibyl) on the "
                        "default compare suite, HSS perf and cost")
    b.add_argument("--synthetic-requests", type=whole(1, 1 << 32), default=200_000,
                   help="with --agreement: requests per synthetic workload (default 200000)")
    b.set_defaults(func=cmd_bench)


def cmd_bench(a):
    from hbl.experiments.bench import AGREEMENT_POLICIES, agreement, bench, format_agreement, format_bench
    if a.agreement:
        r = agreement(policies=a.policies.split(",") if a.policies else AGREEMENT_POLICIES,
                      synthetic_requests=a.synthetic_requests)
        print_json(r) if a.json else print(format_agreement(r))
        return 0
    b = bench(requests=a.requests, policies=a.policies.split(",") if a.policies else None, repeat=a.repeat)
    if a.json:
        print_json(b)
    else:
        print(format_bench(b))
    return 0
