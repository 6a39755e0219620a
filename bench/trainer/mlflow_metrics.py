#!/usr/bin/env python3
"""mlflow_metrics.py - summary of a ganflow-train run's perf/ metrics, read
back from the MLflow REST API (standard library only).

  mlflow_metrics.py URI RUN_ID [--skip N] [--batch N]

Prints one line of key=value pairs: images/s (median of the
perf/images_per_sec points, the first N points skipped as warm-up; each point
is steps x batch / summed step time over --log-every steps) and the step time
it implies, the best point (the figure closest to an idle machine when the
load swings), the step-time split (median and mean of perf/data_wait_s and
perf/compute_s, logged with the same points as perf/images_per_sec, each the
mean over the --log-every steps before it; the same warm-up points skipped),
and the highest perf/peak_rss_megabytes.
"""
import json
import statistics
import sys
import urllib.parse
import urllib.request


def history(uri, run_id, key):
    pts, token = [], None
    while True:
        q = {"run_id": run_id, "metric_key": key, "max_results": 25000}
        if token:
            q["page_token"] = token
        url = uri.rstrip("/") + "/api/2.0/mlflow/metrics/get-history?" + urllib.parse.urlencode(q)
        with urllib.request.urlopen(url, timeout=30) as r:
            body = json.load(r)
        pts += body.get("metrics", [])
        token = body.get("next_page_token")
        if not token:
            break
    pts.sort(key=lambda m: int(m.get("step", 0)))
    return [(int(m.get("step", 0)), float(m["value"])) for m in pts]


def main():
    args = sys.argv[1:]
    skip, batch = 1, 64
    if "--batch" in args:
        i = args.index("--batch")
        batch = int(args[i + 1])
        del args[i:i + 2]
    if "--skip" in args:
        i = args.index("--skip")
        skip = int(args[i + 1])
        del args[i:i + 2]
    uri, run_id = args
    ips = [v for _, v in history(uri, run_id, "perf/images_per_sec")]
    ips = ips[skip:] if len(ips) > skip else ips
    wait = [v for _, v in history(uri, run_id, "perf/data_wait_s")][skip:]
    comp = [v for _, v in history(uri, run_id, "perf/compute_s")][skip:]
    peak = [v for _, v in history(uri, run_id, "perf/peak_rss_megabytes")]
    nan = float("nan")
    med_ips = statistics.median(ips) if ips else nan
    out = {
        "img_per_s_median": med_ips,
        "img_per_s_best": max(ips) if ips else nan,
        "img_per_s_points": len(ips),
        "step_ms": 1e3 * batch / med_ips if ips else nan,
        "data_wait_ms_median": 1e3 * statistics.median(wait) if wait else nan,
        "compute_ms_median": 1e3 * statistics.median(comp) if comp else nan,
        "data_wait_ms_mean": 1e3 * statistics.mean(wait) if wait else nan,
        "compute_ms_mean": 1e3 * statistics.mean(comp) if comp else nan,
        "split_samples": len(comp),
        "peak_rss_mb": max(peak) if peak else float("nan"),
    }
    print(" ".join("%s=%s" % (k, ("%.2f" % v) if isinstance(v, float) else v) for k, v in out.items()))


if __name__ == "__main__":
    main()
