#!/usr/bin/env python3
"""tritonclient_check.py - ganflow-serve as NVIDIA's own KServe V2 client
(tritonclient.http) sees it. Run by test_serve_triton against a server
that serves one model; exits 0 when every check holds, 1 on a failed
check, 77 when tritonclient is not installed in this Python (the test is
then skipped; the `SKIP: ...` line says why). tritonclient installed but
failing to import (a missing dependency, a broken install) is a failed
check: exit 1 with Python's error.

Checks: health (is_server_live, is_server_ready, is_model_ready with and
without a version), get_server_metadata (binary_tensor_data listed),
get_model_metadata (inputs seed and z, output image and their shapes; a
version not served raises), infer with InferInput / InferRequestedOutput in
JSON and in binary (binary_data=True on input and output), FP32 and UINT8
images, seeds and z: JSON and binary answers hold the same values, UINT8
equals the /v1 generate JSON pixels of the same seeds and the PNG mapping
of the FP32 values, shapes and dtypes as the metadata says, and bad
requests raise InferenceServerException with status 400 or 404.
"""
import argparse
import importlib.util
import json
import sys
import urllib.request

try:
    import numpy as np
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException
except ImportError as e:
    if importlib.util.find_spec("tritonclient") is None:  # a skip, saying why
        print(f"SKIP: tritonclient is not installed in {sys.executable} "
              "(deploy/install-deps.sh installs tritonclient[http] in .venv)")
        sys.exit(77)
    print(f"FAIL: tritonclient is installed in {sys.executable} but "
          f"`import tritonclient.http` fails: {type(e).__name__}: {e}",
          file=sys.stderr)
    sys.exit(1)

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def expect_error(fn, what, statuses=("400",)):
    try:
        fn()
    except InferenceServerException as e:
        check(e.status() in statuses, f"{what}: status {e.status()} ({e})")
        return
    check(False, f"{what}: no InferenceServerException")


def infer(c, model, seeds=None, z=None, binary_in=False, binary_out=False,
          dtype=None, version="", outputs=True, rid="rq"):
    if seeds is not None:
        inp = httpclient.InferInput("seed", [len(seeds)], "INT64")
        inp.set_data_from_numpy(np.array(seeds, dtype=np.int64),
                                binary_data=binary_in)
    else:
        inp = httpclient.InferInput("z", list(z.shape), "FP32")
        inp.set_data_from_numpy(z, binary_data=binary_in)
    outs = [httpclient.InferRequestedOutput("image", binary_data=binary_out)]
    params = {"image_datatype": dtype} if dtype else None
    r = c.infer(model, [inp], model_version=version, request_id=rid,
                outputs=outs if outputs else None, parameters=params)
    resp = r.get_response()
    check(resp.get("id") == rid, f"id echoed: {resp.get('id')}")
    check(resp.get("model_name") == model, "model_name")
    return r.as_numpy("image"), resp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True, help="HOST:PORT")
    ap.add_argument("--model", required=True)
    ap.add_argument("--version", required=True, help="the version served")
    ap.add_argument("--max-images", type=int, required=True)
    a = ap.parse_args()
    m = a.model
    c = httpclient.InferenceServerClient(url=a.url, connection_timeout=30.0,
                                         network_timeout=120.0)

    # health and metadata
    check(c.is_server_live(), "is_server_live")
    check(c.is_server_ready(), "is_server_ready")
    check(c.is_model_ready(m), "is_model_ready")
    check(c.is_model_ready(m, a.version), "is_model_ready(version)")
    check(not c.is_model_ready(m, "999"), "is_model_ready(999) is False")
    check(not c.is_model_ready("no-such-model"), "unknown model not ready")
    sm = c.get_server_metadata()
    check(sm.get("name") == "ganflow-serve", f"server name {sm}")
    check("binary_tensor_data" in sm.get("extensions", []),
          f"extensions {sm}")
    check(isinstance(sm.get("version"), str), "server version")
    mm = c.get_model_metadata(m)
    check(mm.get("name") == m and a.version in mm.get("versions", []),
          f"model metadata {mm}")
    check(mm.get("platform") == "ganflow", "platform")
    check(mm.get("max_images") == a.max_images,
          f"max_images {mm.get('max_images')}, the server's is {a.max_images}")
    ins = {i["name"]: i for i in mm["inputs"]}
    check(set(ins) == {"seed", "z"}, f"inputs {ins}")
    check(ins["seed"]["datatype"] == "INT64" and ins["seed"]["shape"] == [-1],
          "seed metadata")
    z_dim = ins["z"]["shape"][1]
    check(ins["z"]["datatype"] == "FP32" and ins["z"]["shape"] == [-1, z_dim],
          "z metadata")
    out = mm["outputs"][0]
    check(out["name"] == "image" and out["shape"][0] == -1 and
          len(out["shape"]) == 4, f"output {out}")
    chw = tuple(out["shape"][1:])
    mv = c.get_model_metadata(m, model_version=a.version)
    check(mv.get("name") == m, "model metadata by version")
    expect_error(lambda: c.get_model_metadata(m, model_version="999"),
                 "metadata of a version not served", ("404",))

    # seeds: JSON and binary, FP32
    seeds = [7, 8, 9]
    fj, rj = infer(c, m, seeds)
    fb, rb = infer(c, m, seeds, binary_in=True, binary_out=True)
    fn, _ = infer(c, m, seeds, binary_in=True, outputs=False)  # all binary
    fv, rv = infer(c, m, seeds, binary_in=True, binary_out=True,
                   version=a.version)
    for name, arr in (("json", fj), ("binary", fb), ("no outputs", fn),
                      ("versioned", fv)):
        check(arr.dtype == np.float32, f"{name}: dtype {arr.dtype}")
        check(arr.shape == (3,) + chw, f"{name}: shape {arr.shape}")
    check(np.array_equal(fj, fb), "FP32: JSON == binary")
    check(np.array_equal(fj, fn), "FP32: JSON == binary_data_output")
    check(np.array_equal(fj, fv), "FP32: versioned route")
    check(rb["outputs"][0]["parameters"]["binary_data_size"] == fb.nbytes,
          "binary_data_size")
    check(rv["model_version"] == a.version, "model_version")
    check(np.all(np.abs(fj) <= 1.0), "FP32 values in [-1, 1]")
    check(not np.array_equal(fj[0], fj[1]), "seeds give different images")
    one, _ = infer(c, m, [8], binary_in=True, binary_out=True)
    check(np.array_equal(one[0], fj[1]), "seed 8 alone == in a batch")

    # UINT8: JSON and binary, equal to /v1 generate's pixels
    uj, ru = infer(c, m, seeds, dtype="UINT8")
    ub, _ = infer(c, m, seeds, binary_in=True, binary_out=True,
                  dtype="UINT8")
    check(ru["outputs"][0]["datatype"] == "UINT8", "UINT8 datatype")
    check(uj.dtype == np.uint8 and ub.dtype == np.uint8,
          f"UINT8 dtypes {uj.dtype} {ub.dtype}")
    check(uj.shape == (3,) + chw and ub.shape == (3,) + chw, "UINT8 shapes")
    check(np.array_equal(uj, ub), "UINT8: JSON == binary")
    ref = np.floor((np.clip(fj.astype(np.float64), -1, 1) + 1) * 0.5 * 255
                   + 0.5).astype(np.uint8)
    check(np.array_equal(ub, ref), "UINT8 == PNG mapping of the FP32 values")
    for k, s in enumerate(seeds):
        url = (f"http://{a.url}/v1/models/{m}/generate?seed={s}"
               "&format=json")
        with urllib.request.urlopen(url, timeout=60) as resp:
            g = json.load(resp)
        px = np.array(g["data"], dtype=np.uint8).reshape(chw)
        check(np.array_equal(px, ub[k]), f"UINT8 == /v1 generate seed {s}")

    # z: JSON and binary
    z = np.random.default_rng(0).standard_normal((2, z_dim)).astype(
        np.float32)
    zj, _ = infer(c, m, z=z)
    zb, _ = infer(c, m, z=z, binary_in=True, binary_out=True)
    zu, _ = infer(c, m, z=z, binary_in=True, binary_out=True, dtype="UINT8")
    check(zj.shape == (2,) + chw and zj.dtype == np.float32, "z shape")
    check(np.array_equal(zj, zb), "z: JSON == binary")
    check(zu.dtype == np.uint8 and zu.shape == (2,) + chw, "z UINT8")
    check(not np.array_equal(zj[0], zj[1]), "latents give different images")

    # bad requests
    def bad_input():
        inp = httpclient.InferInput("w", [1], "INT64")
        inp.set_data_from_numpy(np.array([1], dtype=np.int64))
        c.infer(m, [inp])
    expect_error(bad_input, "unknown input")

    def bad_output():
        inp = httpclient.InferInput("seed", [1], "INT64")
        inp.set_data_from_numpy(np.array([1], dtype=np.int64))
        c.infer(m, [inp], outputs=[httpclient.InferRequestedOutput("logits")])
    expect_error(bad_output, "unknown output")
    expect_error(lambda: infer(c, m, list(range(a.max_images + 1)),
                               binary_in=True), "batch over --max-images")
    expect_error(lambda: infer(c, m, seeds, dtype="FP16"), "datatype FP16")
    expect_error(lambda: infer(c, m, z=z[:, :-1], binary_in=True),
                 "z of the wrong width")
    expect_error(lambda: infer(c, m, [-1], binary_in=True), "negative seed")
    expect_error(lambda: infer(c, m, seeds, version="999"),
                 "infer on a version not served", ("404",))
    expect_error(lambda: c.infer("no-such-model", []), "unknown model",
                 ("404",))

    # the server is still fine
    again, _ = infer(c, m, seeds, binary_in=True, binary_out=True)
    check(np.array_equal(again, fj), "same answer after the bad requests")
    c.close()
    if FAILURES:
        print(f"{len(FAILURES)} checks failed", file=sys.stderr)
        return 1
    print("tritonclient_check: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
