#!/usr/bin/env python3
"""image_resize_reference.py - the golden values of test_train_images.c:
Pillow's Image.resize with its default filter (bicubic for modes L and
RGB), which mlflow.tracking.multimedia.compress_image_size uses for the
+compressed.webp preview of MlflowClient.log_image. Prints three arrays
(flattened, row-major, interleaved channels): a 5x3 gray ramp up to 8x4, a
9x9 gray pattern down to 4x4, a 6x4 RGB pattern to 3x7.
Usage: .venv/bin/python tests/trainer/image_resize_reference.py
(Pillow 13.0.0's wheel runs the vertical pass first for some shapes that
shrink one axis and keep or grow the other, e.g. 4x6 -> 7x3, and then
differs by 1 here and there from Resample.c's horizontal-first order, which
the C code follows; the cases here, and the square grids the trainer logs,
run horizontal first in both.)"""
import numpy as np
from PIL import Image

a = np.array([[(x * 37 + y * 91) % 256 for x in range(5)] for y in range(3)],
             dtype=np.uint8)
print("up", np.asarray(Image.fromarray(a).resize((8, 4))).reshape(-1).tolist())
b = np.array([[(x * x * 7 + y * 29) % 256 for x in range(9)] for y in range(9)],
             dtype=np.uint8)
print("down", np.asarray(Image.fromarray(b).resize((4, 4))).reshape(-1).tolist())
rgb = np.array([[[(x * 50) % 256, (y * 60) % 256, ((x + y) * 30) % 256]
                 for x in range(6)] for y in range(4)], dtype=np.uint8)
print("rgb", np.asarray(Image.fromarray(rgb).resize((3, 7))).reshape(-1).tolist())
