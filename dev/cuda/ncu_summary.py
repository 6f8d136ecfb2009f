"""Group an `ncu --csv` log of decode-step kernels (dev/cuda/run_ncu.sh) by
kernel and launch shape: calls, microseconds, MB read from DRAM, GB/s."""
import collections
import csv
import sys


def main(path):
    lines = open(path).read().splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    kernels = collections.OrderedDict()
    for r in csv.DictReader(lines[head:]):
        k = kernels.setdefault(r["ID"], {"name": r["Kernel Name"].split("(")[0], "grid": r["Grid Size"]})
        k[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    base = {"gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "launch__registers_per_thread",
            "launch__grid_size", "launch__block_size", "name", "grid"}
    extra = sorted({m for k in kernels.values() for m in k} - base)  # run_ncu.sh's EXTRA: mean per call
    groups = collections.OrderedDict()
    for k in kernels.values():
        g = groups.setdefault((k["name"], k["grid"]), [0, 0.0, 0.0] + [0.0] * len(extra))
        g[0] += 1
        g[1] += k["gpu__time_duration.sum"] / 1e3
        g[2] += k["dram__bytes_read.sum"] / 1e6
        for i, m in enumerate(extra):
            g[3 + i] += k.get(m, 0.0)
    total = sum(g[1] for g in groups.values())
    print("| kernel | grid | calls | us a call | MB read a call | GB/s | share of the sum |" + "".join(f" {m} |" for m in extra))
    print("|---|---|---|---|---|---|---|" + "---|" * len(extra))
    for (name, grid), g in sorted(groups.items(), key=lambda x: -x[1][1]):
        n, us, mb = g[0], g[1], g[2]
        cols = "".join(f" {v / n:.4g} |" for v in g[3:])
        print(f"| {name} | {grid} | {n} | {us / n:.1f} | {mb / n:.2f} | {1e3 * mb / us:.0f} | {100 * us / total:.1f}% |{cols}")
    print(f"\n{len(kernels)} kernels, {total:.0f} us in all")


if __name__ == "__main__":
    main(sys.argv[1])
