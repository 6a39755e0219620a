"""pyfunc_predict.py - the python_function flavor of a model directory as
MLflow loads it, for test_pyfunc.c: mlflow.pyfunc.load_model(DIR), then
predict() for seeds and for latents in each input form the flavor takes
(a pandas DataFrame, a list of row dicts, a dict of numpy columns, a numpy
array), every form giving the same images. Writes, as little-endian
float32, OUT/latents.f32 (the flavor's own latents of SEEDS), OUT/seed.f32
(images of SEEDS) and OUT/z.f32 (images of the rows of Z_FILE, a float32
[n, z_dim] file).

Usage: python pyfunc_predict.py DIR SEEDS(comma-separated) Z_FILE OUT
"""
import os
import sys

import numpy as np
import pandas as pd

import mlflow


def main():
    mdir, seeds, zfile, out = sys.argv[1:5]
    seeds = [int(s) for s in seeds.split(",")]
    m = mlflow.pyfunc.load_model(mdir)
    impl = m.get_raw_model()
    zd = impl.z_dim
    z = np.fromfile(zfile, dtype="<f4").reshape(-1, zd)

    img_seed = m.predict(pd.DataFrame({"seed": seeds}))
    assert img_seed.dtype == np.float32, img_seed.dtype
    assert img_seed.shape == (len(seeds),) + impl.image_shape, img_seed.shape
    for form in ([{"seed": s} for s in seeds], ):
        same = m.predict(form)
        assert np.array_equal(same, img_seed), "records form differs"
    # Straight to the loader (no schema enforcement): dict of columns and
    # a plain integer array.
    for form in ({"seed": np.array(seeds, dtype=np.int64)}, np.array(seeds, dtype=np.int64)):
        assert np.array_equal(impl.predict(form), img_seed), f"{type(form)} differs"

    img_z = m.predict(pd.DataFrame({"z": [row.tolist() for row in z]}))
    assert img_z.shape == (len(z),) + impl.image_shape, img_z.shape
    same = m.predict([{"z": row.tolist()} for row in z])
    assert np.array_equal(same, img_z), "records z differs"
    assert np.array_equal(impl.predict(z), img_z), "numpy z differs"
    assert np.array_equal(impl.predict({"z": z}), img_z), "dict z differs"

    # Seeds and latents mixed row by row (straight to the loader: MLflow's
    # schema enforcement refuses NaN in the long column).
    lat = impl.latents(pd.DataFrame({"seed": seeds}))
    mixed = impl.predict(pd.DataFrame({"seed": [seeds[0], None],
                                       "z": [None, z[0].tolist()]}))
    # (numpy's BLAS may sum a batch of 2 in another order than one of 5:
    # the resnet's eleven layers of 3x3 convolutions reach ~1e-6)
    assert np.allclose(mixed[0], img_seed[0], atol=1e-5) and \
        np.allclose(mixed[1], img_z[0], atol=1e-5), "mixed rows differ"

    # Refusals: a z of the wrong length, a row with neither, a negative seed
    # (ganflow's seeds are unsigned: ganflow-serve refuses it too), a class
    # for this unconditional model.
    for bad in (pd.DataFrame({"z": [[0.0] * (zd + 1)]}), pd.DataFrame({"seed": [None]}),
                pd.DataFrame({"z": [[float("nan")] * zd]}), pd.DataFrame({"seed": [1.5]}),
                pd.DataFrame({"other": [1]}), pd.DataFrame({"seed": [-1]}),
                pd.DataFrame({"seed": [1], "class": [0]})):  # not conditional
        try:
            impl.predict(bad)
        except ValueError:
            pass
        else:
            raise AssertionError(f"accepted {bad}")

    lat.astype("<f4").tofile(os.path.join(out, "latents.f32"))
    img_seed.astype("<f4").tofile(os.path.join(out, "seed.f32"))
    img_z.astype("<f4").tofile(os.path.join(out, "z.f32"))


if __name__ == "__main__":
    main()
