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
    groups = collections.OrderedDict()
    for k in kernels.values():
        g = groups.setdefault((k["name"], k["grid"]), [0, 0.0, 0.0])
        g[0] += 1
        g[1] += k["gpu__time_duration.sum"] / 1e3
        g[2] += k["dram__bytes_read.sum"] / 1e6
    total = sum(g[1] for g in groups.values())
    print("| kernel | grid | calls | us a call | MB read a call | GB/s | share of the sum |")
    print("|---|---|---|---|---|---|---|")
    for (name, grid), (n, us, mb) in sorted(groups.items(), key=lambda x: -x[1][1]):
        print(f"| {name} | {grid} | {n} | {us / n:.1f} | {mb / n:.2f} | {1e3 * mb / us:.0f} | {100 * us / total:.1f}% |")
    print(f"\n{len(kernels)} kernels, {total:.0f} us in all")


if __name__ == "__main__":
    main(sys.argv[1])
