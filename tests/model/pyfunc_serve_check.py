"""pyfunc_serve_check.py - a registered ganflow model through MLflow's own
Python side, for test_pyfunc_integration.c:

  1. mlflow.pyfunc.load_model(URI).predict for SEEDS and for the rows of
     Z_FILE (float32 [n, z_dim]) -> OUT/pyfunc_seed.f32, OUT/pyfunc_z.f32;
  2. `mlflow models serve -m URI --env-manager local -p PORT` (MLflow's
     scoring server; MLFLOW_TRACKING_URI from the environment), then POST
     /invocations with each body form below: the forms MLflow accepts for
     the model's column signature must answer 200 with
     {"predictions": [n][C][H][W]} equal to step 1's images (the JSON
     round trip of float32 is exact), written to OUT/serve_<form>.f32; the
     forms it refuses must answer 400 (MLflow turns `instances` records and
     an `inputs` dict of columns into ONE row when the signature has an
     array column, and refuses NaN in a long column).

Usage: python pyfunc_serve_check.py URI SEEDS(comma-separated) Z_FILE OUT
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pandas as pd

import mlflow


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/invocations",
                                 json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, e.read()[:300]


def forms(seeds, z):
    zl = [row.tolist() for row in z]
    ok = {
        "split_seed": {"dataframe_split": {"columns": ["seed"], "data": [[s] for s in seeds]}},
        "records_seed": {"dataframe_records": [{"seed": s} for s in seeds]},
        "inputs_records_seed": {"inputs": [{"seed": s} for s in seeds]},
        "split_z": {"dataframe_split": {"columns": ["z"], "data": [[r] for r in zl]}},
        "records_z": {"dataframe_records": [{"z": r} for r in zl]},
        "inputs_records_z": {"inputs": [{"z": r} for r in zl]},
    }
    refused = {
        "instances_seed": {"instances": [{"seed": s} for s in seeds]},
        "inputs_columns_seed": {"inputs": {"seed": seeds}},
        "instances_z": {"instances": [{"z": r} for r in zl]},
        "inputs_columns_z": {"inputs": {"z": zl}},
        "records_mixed": {"dataframe_records": [{"seed": seeds[0]}, {"z": zl[0]}]},
    }
    return ok, refused


def main():
    uri, seeds, zfile, out = sys.argv[1:5]
    seeds = [int(s) for s in seeds.split(",")]
    m = mlflow.pyfunc.load_model(uri)
    impl = m.get_raw_model()
    z = np.fromfile(zfile, dtype="<f4").reshape(-1, impl.z_dim)
    img_seed = m.predict(pd.DataFrame({"seed": seeds}))
    img_z = m.predict(pd.DataFrame({"z": [row.tolist() for row in z]}))
    img_seed.astype("<f4").tofile(os.path.join(out, "pyfunc_seed.f32"))
    img_z.astype("<f4").tofile(os.path.join(out, "pyfunc_z.f32"))
    print(f"pyfunc.load_model({uri}): images {img_seed.shape} and {img_z.shape}")

    port = free_port()
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    log = open(os.path.join(out, "serve.log"), "wb")
    srv = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "mlflow"), "models",
                            "serve", "-m", uri, "--env-manager", "local", "-p", str(port)],
                           env=env, stdout=log, stderr=subprocess.STDOUT,
                           start_new_session=True)
    failed = []
    try:
        deadline = time.time() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if srv.poll() is not None or time.time() > deadline:
                raise SystemExit(f"mlflow models serve did not come up (exit {srv.poll()}); "
                                 f"see {out}/serve.log")
            time.sleep(0.5)
        ok, refused = forms(seeds, z)
        for name, body in ok.items():
            code, ans = post(port, body)
            want = img_seed if name.endswith("seed") else img_z
            if code != 200 or not isinstance(ans, dict) or "predictions" not in ans:
                failed.append(f"{name}: HTTP {code}: {ans}")
                continue
            got = np.asarray(ans["predictions"], dtype=np.float32)
            if got.shape != want.shape or not np.array_equal(got, want):
                failed.append(f"{name}: predictions {got.shape} differ from pyfunc's")
            got.astype("<f4").tofile(os.path.join(out, f"serve_{name}.f32"))
            print(f"POST /invocations {name}: 200, predictions {list(got.shape)}")
        for name, body in refused.items():
            code, ans = post(port, body)
            print(f"POST /invocations {name}: {code} (MLflow refuses this form)")
            if code != 400:
                failed.append(f"{name}: expected 400 from MLflow, got {code}")
    finally:
        os.killpg(srv.pid, signal.SIGTERM)
        try:
            srv.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(srv.pid, signal.SIGKILL)
            srv.wait()
        log.close()
    if failed:
        raise SystemExit("FAILED:\n  " + "\n  ".join(failed))


if __name__ == "__main__":
    main()
