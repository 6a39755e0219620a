/* train_images.h - sample grids logged as MLflow images, the way
 * MlflowClient.log_image(run_id, image, key=K, step=S) logs them (MLflow
 * 3.x, mlflow/tracking/client.py and mlflow/tracking/multimedia.py), so
 * that the UI's chart view shows them per step with a slider and side by
 * side across runs:
 *
 *   images/<K'>+step+<S>+timestamp+<ms>+<uuid4>.png             full image
 *   images/<K'>+step+<S>+timestamp+<ms>+<uuid4>+compressed.webp  preview
 *
 * K' is K with each '/' replaced by '~' (K itself must match
 * ^[a-zA-Z0-9_\-./ ]+$, as log_image checks). The preview is the image
 * scaled (up or down) so that its longer side is 256 pixels, keeping the
 * aspect ratio with the shorter side truncated (compress_image_size), by
 * Pillow's default resize filter (bicubic, a = -0.5, support widened by the
 * scale when shrinking, 8-bit fixed point, horizontal pass first: Pillow's
 * Resample.c; Pillow 13's wheel runs the vertical pass first for some
 * shapes that shrink one axis only, and then differs by 1 here and there;
 * the square grids logged here resize identically), then encoded as lossy
 * WebP at quality 80 (Pillow's default
 * save settings) with libwebp. Gray images become RGB for WebP, as Pillow
 * converts mode L. log_image then sets the run tag mlflow.loggedImages to
 * str(True), "True".
 *
 * Not here: generating the grid (model/ gf_grid_to_rgb8), uploading
 * (gf_tracker_upload), anything about GANs. Private to the trainer; no
 * global state; errors follow gf/status.h. */
#ifndef GF_TRAIN_IMAGES_H
#define GF_TRAIN_IMAGES_H

#include <stddef.h>
#include <stdint.h>

#include "gf/status.h"
#include "gf/uuid.h"

#define GF_IMAGE_COMPRESSED_SIZE 256  /* multimedia.COMPRESSED_IMAGE_SIZE */
#define GF_IMAGE_WEBP_QUALITY 80.0f   /* Pillow's WebP default */
#define GF_IMAGE_LOGGED_TAG "mlflow.loggedImages" /* mlflow_tags.py */
#define GF_IMAGE_LOGGED_VALUE "True"  /* str(True), as set_tag writes it */
#define GF_IMAGE_KEY_MAX 250          /* longest key accepted here */
#define GF_IMAGE_NAME_MAX 400         /* >= any name made from such a key */

/* The two artifact paths of one logged image (relative to the run's
 * artifact root). */
typedef struct gf_image_names {
  char png[GF_IMAGE_NAME_MAX];  /* images/...+<uuid>.png */
  char webp[GF_IMAGE_NAME_MAX]; /* images/...+<uuid>+compressed.webp */
} gf_image_names;

/* Fills *out for key, step (>= 0), timestamp_ms (>= 0) and uuid.
 * GF_EINVAL for an empty or too long key, a character log_image refuses,
 * a negative step or timestamp, or a uuid that is not 36 characters of
 * [0-9a-f-]. Allocates nothing. */
gf_status gf_image_names_make(const char *key, int64_t step,
                              int64_t timestamp_ms, const char *uuid,
                              gf_image_names *out, gf_err *err);

/* compress_image_size's target for a w x h image (w, h >= 1): the longer
 * side becomes max_size, the other int(side * max_size / longer); never
 * below 1 (Pillow would refuse 0). */
void gf_image_compressed_size(int w, int h, int max_size, int *out_w,
                              int *out_h);

/* Resizes c-channel (1: gray, 3: RGB) interleaved 8-bit pixels from w x h to
 * out_w x out_h as Pillow's Image.resize(..., BICUBIC) does.
 * Memory: *out is malloc'd here (out_w * out_h * c bytes); the caller
 * frees it with free(); src is only read. On failure *out is NULL. */
gf_status gf_image_resize_bicubic(const uint8_t *src, int w, int h, int c,
                                  int out_w, int out_h, uint8_t **out,
                                  gf_err *err);

/* Encodes w x h pixels of c channels (1: gray, expanded to RGB; 3: RGB)
 * as lossy WebP at `quality` (0..100). Memory: *webp is malloc'd here
 * (*webp_len bytes); the caller frees it with free(). On failure *webp is
 * NULL. GF_EINVAL for bad sizes or channels (WebP sides are <= 16383). */
gf_status gf_image_encode_webp(const uint8_t *pixels, int w, int h, int c,
                               float quality, uint8_t **webp,
                               size_t *webp_len, gf_err *err);

/* Sample grids of small images are scaled up by a whole factor (nearest
 * neighbour: every pixel a square block, nothing blurred) until their
 * longer side nears this, so that a grid of 28-pixel images is legible in
 * MLflow's image card and viewer instead of a 242-pixel thumbnail. */
#define GF_IMAGE_GRID_TARGET_SIDE 1024
#define GF_IMAGE_MAX_SIDE 16383 /* WebP's largest side */

/* The whole factor that brings the longer side of w x h closest to target
 * without passing it: max(1, target / max(w, h)). */
int gf_image_upscale_factor(int w, int h, int target);

/* Scales c-channel interleaved 8-bit pixels up by the whole factor f >= 1:
 * out is (w f) x (h f), pixel (x, y) = src (x / f, y / f). Memory: *out is
 * malloc'd here (w f * h f * c bytes); the caller frees it with free().
 * GF_EINVAL for sizes that are not positive or pass GF_IMAGE_MAX_SIDE.
 * On failure *out is NULL. */
gf_status gf_image_upscale_nearest(const uint8_t *src, int w, int h, int c,
                                   int f, uint8_t **out, gf_err *err);

/* gf_image_compressed_size (GF_IMAGE_COMPRESSED_SIZE) +
 * gf_image_resize_bicubic + gf_image_encode_webp (GF_IMAGE_WEBP_QUALITY):
 * the +compressed.webp companion of an image, as log_image makes it.
 * Memory as gf_image_encode_webp; nothing else outlives the call. */
gf_status gf_image_compressed_webp(const uint8_t *pixels, int w, int h, int c,
                                   uint8_t **webp, size_t *webp_len,
                                   gf_err *err);

#endif
