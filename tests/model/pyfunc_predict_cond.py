"""pyfunc_predict_cond.py - the python_function flavor of a class-conditional
model directory as MLflow loads it, for test_pyfunc_cond.c:
mlflow.pyfunc.load_model(DIR), then predict() for the latents of Z_FILE
(float32 [n, z_dim]) with the classes CLASSES (comma-separated indices),
through MLflow's schema enforcement (a DataFrame with `z` and the long
column `class`, and row records) and straight to the loader with the
classes as names, as index strings and as a dict of numpy columns, every
form giving the same images; then the refusals: no class, an unknown
name, a name in the wrong case, an index out of range, a leading zero, a
boolean, a fraction. Writes OUT/img.f32 (little-endian float32 images).

Usage: python pyfunc_predict_cond.py DIR Z_FILE CLASSES OUT
"""
import json
import os
import sys

import numpy as np
import pandas as pd

import mlflow


def refused(impl, data, what):
    try:
        impl.predict(data)
    except ValueError as e:
        print(f"refused ({what}): {e}")
        return
    raise AssertionError(f"accepted {what}: {data}")


def main():
    mdir, zfile, classes, out = sys.argv[1:5]
    classes = [int(c) for c in classes.split(",")]
    m = mlflow.pyfunc.load_model(mdir)
    impl = m.get_raw_model()
    with open(os.path.join(mdir, "config.json"), encoding="utf-8") as f:
        names = json.load(f)["class_names"]
    assert impl.class_names == names and impl.num_classes == len(names), impl.class_names
    inputs = [c.name for c in m.metadata.get_input_schema().inputs]
    assert inputs == ["seed", "z", "class"], inputs
    z = np.fromfile(zfile, dtype="<f4").reshape(-1, impl.z_dim)
    n = len(z)
    rows = [r.tolist() for r in z]

    img = m.predict(pd.DataFrame({"z": rows, "class": classes}))
    assert img.dtype == np.float32 and img.shape == (n,) + impl.image_shape, img.shape
    same = m.predict([{"z": r, "class": c} for r, c in zip(rows, classes)])
    assert np.array_equal(same, img), "records form differs"
    # Straight to the loader: names, index strings, numpy columns, mixed.
    by_name = [names[c] for c in classes]
    assert np.array_equal(impl.predict(pd.DataFrame({"z": rows, "class": by_name})), img)
    assert np.array_equal(impl.predict({"z": z, "class": np.array(classes)}), img)
    as_str = [str(c) for c in classes]
    assert np.array_equal(impl.predict({"z": z, "class": as_str}), img), "index strings"
    # a name that looks like an index is the name ("7" is class 2)
    assert impl.classes({"z": z[:1], "class": ["7"]}).tolist() == [names.index("7")]
    mixed = [by_name[i] if i % 2 else classes[i] for i in range(n)]
    assert np.array_equal(impl.predict({"z": z, "class": mixed}), img), "mixed forms"
    assert np.array_equal(impl.classes({"z": z, "class": by_name}), np.array(classes))
    # A seed row takes a class too; the same seed in another class differs.
    a = impl.predict(pd.DataFrame({"seed": [5, 5], "class": [0, 1]}))
    assert not np.allclose(a[0], a[1]), "class makes no difference for a seed"

    one = {"z": z[:1]}
    refused(impl, one, "no class column")
    refused(impl, pd.DataFrame({"z": rows[:2], "class": [0, None]}), "a missing class")
    refused(impl, np.asarray(z), "a bare latent array")
    refused(impl, dict(one, **{"class": ["dog"]}), "an unknown name")
    refused(impl, dict(one, **{"class": [names[1].lower()]}), "a name in the wrong case")
    refused(impl, dict(one, **{"class": [len(names)]}), "an index out of range")
    refused(impl, dict(one, **{"class": [-1]}), "a negative index")
    refused(impl, dict(one, **{"class": ["01"]}), "a leading zero")
    refused(impl, dict(one, **{"class": [True]}), "a boolean")
    refused(impl, dict(one, **{"class": [1.5]}), "a fraction")
    try:
        m.predict(pd.DataFrame({"z": rows[:1]}))
    except Exception as e:  # MLflow may wrap the loader's ValueError
        print(f"refused (MLflow, no class): {type(e).__name__}")
    else:
        raise AssertionError("MLflow predict without a class was accepted")

    img.astype("<f4").tofile(os.path.join(out, "img.f32"))


if __name__ == "__main__":
    main()
