#!/usr/bin/env python3
"""coarse_compare.py A.csv B.csv [TOL]: tests/coarse_sweep.sh's checks of two
sweep.csv (A coarse rings, B message level). Exit 1 on a difference above
TOL (default 2e-3): step time relative, each part (compute, TP / PP / DP
and exposed communication) as a share of the step, the bubble fraction
absolute; the top 10 fitting layouts in the same order except ties within
TOL. Also exit 1 when fewer than 5 layouts are in both."""
import csv
import sys

PARTS = ("compute_s", "tp_comm_s", "pp_comm_s", "dp_comm_s", "exposed_comm_s")


def load(path):
    rows = [r for r in csv.DictReader(open(path)) if r["step_time_s"] not in ("", "nan")]
    return rows, {r["layout"]: r for r in rows}


def ranked(rows):
    fit = [r for r in rows if r["fits"] == "1"]
    return sorted(fit, key=lambda r: float(r["step_time_s"]))[:10]


def main():
    tol = float(sys.argv[3]) if len(sys.argv) > 3 else 2e-3
    ra, a = load(sys.argv[1])
    rb, b = load(sys.argv[2])
    common = sorted(set(a) & set(b))
    bad = 0
    w_step = w_part = w_bub = 0.0
    for k in common:
        sa, sb = float(a[k]["step_time_s"]), float(b[k]["step_time_s"])
        d = abs(sa - sb) / sb
        w_step = max(w_step, d)
        if d > tol:
            print(f"  {k} step_time_s: coarse {sa} message level {sb} ({d:.2e})")
            bad += 1
        for c in PARTS:
            d = abs(float(a[k][c]) - float(b[k][c])) / sb
            w_part = max(w_part, d)
            if d > tol:
                print(f"  {k} {c}: coarse {a[k][c]} message level {b[k][c]} "
                      f"({d:.2e} of the step)")
                bad += 1
        d = abs(float(a[k]["bubble_fraction"]) - float(b[k]["bubble_fraction"]))
        w_bub = max(w_bub, d)
        if d > tol:
            print(f"  {k} bubble_fraction: coarse {a[k]['bubble_fraction']} "
                  f"message level {b[k]['bubble_fraction']}")
            bad += 1
    ta, tb = ranked(ra), ranked(rb)
    for i, (x, y) in enumerate(zip(ta, tb)):
        sx, sy = float(x["step_time_s"]), float(y["step_time_s"])
        if x["layout"] != y["layout"] and abs(sx - sy) / sy > tol:
            print(f"  rank {i + 1}: coarse {x['layout']} ({sx}) "
                  f"message level {y['layout']} ({sy})")
            bad += 1
    print(f"  {len(common)} layouts in both; worst difference: step {w_step:.1e}, "
          f"a part {w_part:.1e} of the step, bubble {w_bub:.1e}; "
          f"top {len(ta)} in the same order")
    return 1 if len(common) < 5 or bad else 0


if __name__ == "__main__":
    sys.exit(main())
