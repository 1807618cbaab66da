"""Rates over time per leaf of the Eiffel Fig. 6 policy, plotted with matplotlib.

    pip install ./python matplotlib pandas
    python python/examples/plot_rates.py [POLICY.toml or ""] [rates.png]
"""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import eiffel  # noqa: E402


def main() -> None:
    policy = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else None
    out = sys.argv[2] if len(sys.argv) > 2 else "rates.png"
    report = eiffel.run(policy, duration="5s")
    series = eiffel.to_dataframes(report)["series"] / 1e6
    ax = series.plot(figsize=(10, 5), linewidth=2)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("Mbit/s")
    ax.set_title(f"{report['policy']}: rates per leaf")
    plt.tight_layout()
    plt.savefig(out, dpi=120)
    t = report["totals"]
    print(f"{t['dequeued']} packets sent, {t['dropped']} dropped; plot written to {out}")


if __name__ == "__main__":
    main()
