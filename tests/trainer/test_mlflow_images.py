"""test_mlflow_images.py - run by test_train_integration.c with the
checkout's .venv python: reads a finished run's sample grids through
MLflow's own Python client, as the UI sees them.

Usage: python test_mlflow_images.py TRACKING_URI RUN_ID STEPS
(STEPS: the comma-separated steps whose grids must be there).
Checks: every file under images/ parses as the UI parses log_image names
(<key with / as ~>+step+<S>+timestamp+<ms>+<uuid>[+compressed].<ext>), key
"samples", exactly the expected steps, a .png and a +compressed.webp of the
same uuid per step, the tag mlflow.loggedImages == str(True); and one
preview equals what log_image would make of the PNG
(compress_image_size: same size, pixels within lossy-WebP error).
Exits non-zero with the reason on any miss."""
import collections
import sys
import tempfile

import mlflow
import numpy as np
import PIL.Image
from mlflow.tracking.multimedia import compress_image_size
from mlflow.utils.mlflow_tags import MLFLOW_LOGGED_IMAGES


def main():
    uri, run_id, steps = sys.argv[1], sys.argv[2], sys.argv[3]
    want = sorted(int(s) for s in steps.split(","))
    client = mlflow.MlflowClient(uri)
    files = [f.path for f in client.list_artifacts(run_id, "images")]
    seen = collections.defaultdict(dict)
    for path in files:
        name = path.split("/", 1)[1]
        stem, ext = name.rsplit(".", 1)
        parts = stem.split("+")
        assert len(parts) in (6, 7), path
        assert parts[1] == "step" and parts[3] == "timestamp", path
        assert parts[0].replace("~", "/") == "samples", path
        int(parts[4])
        compressed = len(parts) == 7
        assert not compressed or parts[6] == "compressed", path
        assert ext == ("webp" if compressed else "png"), path
        seen[int(parts[2])][ext] = parts[5]
    assert sorted(seen) == want, f"steps {sorted(seen)}, want {want}"
    for step, exts in seen.items():
        assert set(exts) == {"png", "webp"}, f"step {step}: {exts}"
        assert exts["png"] == exts["webp"], f"step {step}: uuids differ"
    tag = client.get_run(run_id).data.tags.get(MLFLOW_LOGGED_IMAGES)
    assert tag == str(True), f"tag {MLFLOW_LOGGED_IMAGES} = {tag!r}"

    png = sorted(p for p in files if p.endswith(".png"))[-1]
    webp = png[:-len(".png")] + "+compressed.webp"
    tmp = tempfile.mkdtemp()
    full = PIL.Image.open(client.download_artifacts(run_id, png, tmp))
    ours = PIL.Image.open(client.download_artifacts(run_id, webp, tmp))
    ref = compress_image_size(full)
    assert ours.format == "WEBP", ours.format
    assert ours.size == ref.size, f"preview {ours.size}, log_image {ref.size}"
    diff = np.abs(np.asarray(ours.convert("RGB"), dtype=float) -
                  np.asarray(ref.convert("RGB"), dtype=float)).mean()
    assert diff < 8.0, f"preview differs from log_image's by {diff:.2f}"
    print(f"images: {len(files)} files, steps {sorted(seen)}, tag {tag}, "
          f"preview {ours.size} mean |diff| {diff:.2f} vs log_image's")


if __name__ == "__main__":
    main()
