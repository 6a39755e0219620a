"""make_fuzz_corpus.py - writes the seed corpora of the gf_model fuzz
targets (tests/fuzz/corpus/{safetensors,mlmodel,model_config}/): a few valid
inputs and a few broken ones each. Standard library only; run from anywhere:
    python3 tests/model/make_fuzz_corpus.py
"""
import hashlib
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def st(header, data, pad=True):
    h = json.dumps(header, separators=(",", ":")).encode() if not isinstance(header, bytes) else header
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def safetensors():
    w = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    s = struct.pack("<2q", 7, 8)
    u = bytes([9, 10, 11])
    data = s + w + u
    digest = hashlib.sha256(data).hexdigest()
    hdr = {
        "__metadata__": {"ganflow.data_sha256": digest, "note": "valid"},
        "steps": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]},
        "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [16, 40]},
        "u": {"dtype": "U8", "shape": [3], "data_offsets": [40, 43]},
    }
    good = st(hdr, data)
    put("safetensors", "valid_digest", good)
    put("safetensors", "valid_empty", st({}, b""))
    put("safetensors", "valid_scalar_zero",
        st({"s": {"dtype": "BF16", "shape": [], "data_offsets": [0, 2]},
            "z": {"dtype": "F64", "shape": [0, 4], "data_offsets": [2, 2]}}, b"\x80\x3f"))
    put("safetensors", "bad_truncated", good[: len(good) // 2])
    put("safetensors", "bad_len_huge", struct.pack("<Q", 2**63) + good[8:])
    put("safetensors", "bad_len_zero", struct.pack("<Q", 0) + good[8:])
    put("safetensors", "bad_json", st(b'{"a":{"dtype":"F32",', b""))
    put("safetensors", "bad_dtype",
        st({"a": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [0, 4]}}, b"\0" * 4))
    put("safetensors", "bad_size",
        st({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8))
    put("safetensors", "bad_overlap",
        st({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12))
    put("safetensors", "bad_gap",
        st({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
            "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}, b"\0" * 12))
    dup = (b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
           b'"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}')
    put("safetensors", "bad_duplicate", st(dup, b"\1\2"))
    put("safetensors", "bad_metadata",
        st({"__metadata__": {"k": 1}, "a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}},
           b"\1"))
    put("safetensors", "bad_shape_overflow",
        st({"a": {"dtype": "F64", "shape": [2**32, 2**32, 2**32], "data_offsets": [0, 8]}},
           b"\0" * 8))
    flipped = bytearray(good)
    flipped[-5] ^= 1
    put("safetensors", "bad_flipped_byte", bytes(flipped))


MLMODEL = """artifact_path: model
flavors:
  ganflow:
    config:
      architecture: dcgan
      format_version: 1
      image_channels: 3
      image_height: 64
      image_width: 64
      ndf: 64
      ngf: 64
      num_classes: 0
      pixel_normalization: tanh_-1_1
      z_dim: 100
    files:
      config.json:
        sha256: "89833414f8eb5f5bf61bf0304006040afa71d03f8c1f8bea41e93889536f9bf3"
      generator.safetensors:
        sha256: "51dc86ea69c71cd0ff2c06fedc55ad637f8028249e0b0107cae9f3820b1fab25"
    ganflow_version: "0.1.0"
mlflow_version: "2.17.0"
model_uuid: "5261821ea0694f2c9680e79d7a1543af"
run_id: abc123
utc_time_created: "2026-11-22 12:21:30.626142"
"""


def mlmodel():
    put("mlmodel", "valid", MLMODEL)
    put("mlmodel", "valid_flow",
        "{flavors: {ganflow: {ganflow_version: x, config: {architecture: mlp, format_version: 1,"
        " image_channels: 1, image_height: 28, image_width: 28, ndf: 8, ngf: 8, num_classes: 10,"
        " pixel_normalization: tanh_-1_1, z_dim: 2}, files: {config.json: {sha256: '" + "0" * 64 +
        "'}, generator.safetensors: {sha256: '" + "1" * 64 + "'}}}}}\n")
    put("mlmodel", "valid_signature", MLMODEL.replace(
        "utc_time_created:",
        "signature:\n"
        "  inputs: '[{\"name\": \"seed\", \"type\": \"tensor\", \"tensor-spec\": {\"dtype\":"
        " \"int64\", \"shape\": [-1]}}]'\n"
        "  outputs: '[{\"name\": \"image\", \"type\": \"tensor\", \"tensor-spec\": {\"dtype\":"
        " \"float32\", \"shape\": [-1, 3, 64, 64]}}]'\n"
        "  params: null\n"
        "utc_time_created:"))
    # As gf_mlmodel_write writes it since the python_function flavor: the
    # loader and env files listed, the column signature.
    put("mlmodel", "valid_pyfunc", MLMODEL.replace(
        "    files:\n",
        "    files:\n"
        "      code/ganflow_pyfunc.py:\n        sha256: \"" + "2" * 64 + "\"\n"
        "      conda.yaml:\n        sha256: \"" + "3" * 64 + "\"\n").replace(
        "mlflow_version:",
        "  python_function:\n"
        "    code: code\n"
        "    data: generator.safetensors\n"
        "    env:\n"
        "      conda: conda.yaml\n"
        "      virtualenv: python_env.yaml\n"
        "    loader_module: ganflow_pyfunc\n"
        "    python_version: \"3.11.2\"\n"
        "mlflow_version:").replace(
        "utc_time_created:",
        "signature:\n"
        "  inputs: '[{\"type\": \"long\", \"name\": \"seed\", \"required\": false}, "
        "{\"type\": \"array\", \"items\": {\"type\": \"double\"}, \"name\": \"z\", "
        "\"required\": false}]'\n"
        "  outputs: '[{\"name\": \"image\", \"type\": \"tensor\", \"tensor-spec\": {\"dtype\":"
        " \"float32\", \"shape\": [-1, 3, 64, 64]}}]'\n"
        "  params: null\n"
        "utc_time_created:"))
    # A class-conditional model as gf_mlmodel_write writes it: class names
    # in the flavor config (quoted where YAML would read another type), the
    # optional long column class.
    cond = MLMODEL.replace("      num_classes: 0\n", "      num_classes: 3\n").replace(
        "      format_version: 1\n",
        "      class_names:\n"
        "      - \"Ankle boot\"\n"
        "      - \"7\"\n"
        "      - T-shirt/top\n"
        "      format_version: 1\n").replace(
        "utc_time_created:",
        "signature:\n"
        "  inputs: '[{\"type\": \"long\", \"name\": \"seed\", \"required\": false}, "
        "{\"type\": \"array\", \"items\": {\"type\": \"double\"}, \"name\": \"z\", "
        "\"required\": false}, {\"type\": \"long\", \"name\": \"class\", "
        "\"required\": false}]'\n"
        "  outputs: '[{\"name\": \"image\", \"type\": \"tensor\", \"tensor-spec\": {\"dtype\":"
        " \"float32\", \"shape\": [-1, 3, 64, 64]}}]'\n"
        "  params: null\n"
        "utc_time_created:")
    put("mlmodel", "valid_cond", cond)
    put("mlmodel", "bad_class_count", cond.replace("      - \"7\"\n", ""))
    put("mlmodel", "bad_class_dup", cond.replace("- \"7\"", "- \"Ankle boot\""))
    put("mlmodel", "bad_class_name", cond.replace("- \"7\"", "- \"a,b\""))
    put("mlmodel", "bad_class_uncond", cond.replace("num_classes: 3", "num_classes: 0"))
    put("mlmodel", "bad_column_type", MLMODEL.replace(
        "utc_time_created:",
        "signature:\n"
        "  inputs: '[{\"type\": \"object\", \"name\": \"seed\"}]'\n"
        "utc_time_created:"))
    put("mlmodel", "bad_empty_component",
        MLMODEL.replace("      config.json:", "      code//config.json:"))
    put("mlmodel", "bad_escape", MLMODEL.replace("      config.json:", "      ../config.json:"))
    put("mlmodel", "bad_absolute", MLMODEL.replace("      config.json:", "      /etc/passwd:"))
    put("mlmodel", "bad_alias", MLMODEL.replace("artifact_path: model", "artifact_path: &a model\nx: *a"))
    put("mlmodel", "bad_deep", "flavors: " + "[" * 100 + "]" * 100 + "\n")
    put("mlmodel", "bad_no_flavor", MLMODEL.replace("  ganflow:", "  pytorch:"))
    put("mlmodel", "bad_syntax", "artifact_path: [model\n")
    put("mlmodel", "bad_digest", MLMODEL.replace('sha256: "8', 'sha256: "X'))


def model_config():
    dcgan = {"format_version": 1, "architecture": "dcgan", "z_dim": 100, "image_height": 64,
             "image_width": 64, "image_channels": 3, "num_classes": 0, "ngf": 64, "ndf": 64,
             "pixel_normalization": "tanh_-1_1"}
    put("model_config", "valid_dcgan", json.dumps(dcgan, indent=1))
    mlp = dict(dcgan, architecture="mlp", image_height=28, image_width=28, image_channels=1,
               ngf=1024, ndf=1024, num_classes=10, extra={"ignored": [1, 2]})
    put("model_config", "valid_mlp_extra", json.dumps(mlp))
    put("model_config", "bad_missing", json.dumps({k: v for k, v in dcgan.items() if k != "z_dim"}))
    put("model_config", "bad_type", json.dumps(dict(dcgan, z_dim="100")))
    put("model_config", "bad_range", json.dumps(dict(dcgan, image_height=48)))
    put("model_config", "bad_json", json.dumps(dcgan)[:-3])
    put("model_config", "bad_trailing", json.dumps(dcgan) + " []")


if __name__ == "__main__":
    safetensors()
    mlmodel()
    model_config()
