/* swd.h - the sliced Wasserstein distance between two sets of images, the
 * quality metric of ganflow-train (DESIGN §4.8; Karras et al. 2018,
 * "Progressive Growing of GANs", appendix D). Needs no pretrained network.
 *
 * What is computed, for two sets A and B of n images each (C x H x W, H = W):
 *
 *   1. Pixels. uint8 v becomes (v - 127.5) / 127.5 in [-1, 1], the mapping of
 *      the data loader (gf/data.h), so a uint8 real set and a float generated
 *      set compare on one scale. float pixels are taken as they are (they
 *      must be finite).
 *   2. Laplacian pyramid per image. G0 = the image; G(l+1) = blur(G(l))
 *      sampled at even pixels (size ceil(s/2)); band l = G(l) -
 *      up(G(l+1)), where up puts G(l+1) at the even pixels of a zero image of
 *      G(l)'s size and blurs with 4x the kernel. blur is the separable 5x5
 *      Gaussian [1,4,6,4,1]/16 per axis with mirrored borders
 *      (d c b | a b c d | c b a: OpenCV's pyrDown/pyrUp). The coarsest
 *      level is the Gaussian G itself, not a band. Levels go on while the
 *      next size is at least cfg.min_level (default 14 = twice the 7x7
 *      neighbourhood, so one neighbourhood never covers more than a quarter
 *      of a level; Karras used 16). Level sizes with the defaults:
 *          28 -> 28, 14      32 -> 32, 16      64 -> 64, 32, 16
 *      (see gf_swd_levels).
 *   3. Descriptors. From every level of every image, cfg.patches_per_image
 *      7 x 7 neighbourhoods at positions drawn uniformly among those where
 *      the neighbourhood fits (top-left corner in [0, s - 7]^2), each a
 *      vector of 7 * 7 * C values. Image i of A and image i of B use the SAME
 *      positions (a pure function of seed, level, i), so SWD(A, A) is
 *      exactly 0 and SWD(A, B) == SWD(B, A) up to rounding.
 *   4. Normalization, per level and per channel: subtract the mean and divide
 *      by the standard deviation of that channel's values over the
 *      descriptors of BOTH sets (GF_SWD_NORM_JOINT, the default), so a
 *      generator whose brightness or contrast is off is penalized and a
 *      blurred set's weaker fine band is not scaled back up; or over each
 *      set on its own (GF_SWD_NORM_PER_SET, Karras's choice, blind to such
 *      differences). A channel whose deviation is 0 is divided by 1.
 *   5. Sliced Wasserstein. cfg.repeats x cfg.dirs_per_repeat directions,
 *      each a vector of N(0,1) draws normalized to unit length. Per
 *      direction both descriptor sets are projected, each projection sorted,
 *      and the mean absolute difference of the sorted projections taken (the
 *      1-D Wasserstein-1 distance of the two empirical distributions). The
 *      level's SWD is the mean over all directions (equal to Karras's mean
 *      over repeats of the mean over a repeat's directions) times 1e3. The
 *      average is the mean over levels.
 *
 * Randomness (DESIGN §4.1): Philox-4x32-10 streams keyed as model/'s
 * gf_rng_stream keys them, purpose GF_RNG_SWD (6), step 0, rank 0:
 * key = seed halves, counter word 2 = 6 | sub << 8 with sub = 0x100 + level
 * for positions (words 2 (i P + p) and 2 (i P + p) + 1 give the corner's x
 * and y) and sub = 0x200 + level for directions (normal k*D + d is
 * component d of direction k). Nothing keeps RNG state: the result is a pure
 * function of the two image sets, the seed and the configuration, and does
 * not depend on cfg.threads.
 *
 * Cost: about 2 * n * P * 49 C * R multiply-adds and 2 R radix sorts of
 * n * P values per level (P patches per image, R directions). The default
 * P = 32 is a quarter of Karras's 128 per image (R = 4 x 128 as his), so
 * that 2 x 2,000 images of 28 x 28 take about 1 CPU-second (0.6-0.9 s on 2
 * cores; 128 per image: about 5 CPU-seconds); both are fields of
 * gf_swd_config.
 *
 * Errors follow gf/status.h. Nothing here prints, exits or keeps state. */
#ifndef GF_SWD_H
#define GF_SWD_H

#include <stddef.h>
#include <stdint.h>

#include "gf/status.h"

#define GF_SWD_PATCH 7          /* neighbourhood side */
#define GF_SWD_MAX_LEVELS 12    /* pyramid levels reported at most */
#define GF_SWD_MAX_SIDE 4096    /* largest image side accepted */
#define GF_SWD_MAX_THREADS 64

typedef enum gf_swd_pixel {
  GF_SWD_U8 = 0,  /* uint8, 0..255, mapped to [-1, 1] */
  GF_SWD_F32 = 1, /* float, nominally [-1, 1]; must be finite */
} gf_swd_pixel;

typedef enum gf_swd_norm {
  GF_SWD_NORM_JOINT = 0,   /* per level and channel over both sets (default) */
  GF_SWD_NORM_PER_SET = 1, /* per level and channel over each set (Karras) */
} gf_swd_norm;

/* A borrowed view of n images, NCHW planar: image i, channel k, row y,
 * column x at index ((i * c + k) * h + y) * w + x. */
typedef struct gf_swd_images {
  const void *data;  /* borrowed; uint8_t or float per `pixel` */
  gf_swd_pixel pixel;
  int64_t n;         /* images, >= 1 */
  int c;             /* channels, 1 or 3 */
  int h, w;          /* equal; at least cfg.min_level and GF_SWD_PATCH */
} gf_swd_images;

typedef struct gf_swd_config {
  uint64_t seed;          /* keys every random choice */
  int patches_per_image;  /* neighbourhoods per image per level, >= 1 */
  int dirs_per_repeat;    /* directions per repeat, >= 1 */
  int repeats;            /* >= 1; directions in all = repeats * dirs */
  int min_level;          /* smallest level side kept, >= GF_SWD_PATCH */
  gf_swd_norm norm;
  int threads;            /* worker threads, 1..GF_SWD_MAX_THREADS; 0 = the
                             online CPUs (at most GF_SWD_MAX_THREADS) */
} gf_swd_config;

/* Per level and average. */
typedef struct gf_swd_result {
  int levels;                      /* 1..GF_SWD_MAX_LEVELS */
  int size[GF_SWD_MAX_LEVELS];     /* side of level l; size[0] = h */
  double swd[GF_SWD_MAX_LEVELS];   /* level l's SWD x 1e3, >= 0 */
  double avg;                      /* mean of swd[0..levels-1] */
} gf_swd_result;

/* The defaults: seed 0, 32 patches per image, 4 x 128 directions,
 * min_level 14, joint normalization, 1 thread. */
gf_swd_config gf_swd_config_default(void);

/* The pyramid's level sides for images of side `side` under min_level:
 * sizes[0] = side, sizes[l+1] = ceil(sizes[l] / 2) while that is >=
 * min_level, at most GF_SWD_MAX_LEVELS. Returns the number of levels, or 0
 * when side < min_level or min_level < GF_SWD_PATCH. */
int gf_swd_levels(int side, int min_level, int sizes[GF_SWD_MAX_LEVELS]);

/* SWD between a and b under cfg (NULL: the defaults) into *out. a and b must
 * have the same n, c, h, w (pixel types may differ). Allocates its working
 * memory (2 * 4 * 49 C * n P bytes for one level's descriptors, plus per
 * thread 4 * (2 * 32 + 1) * n P bytes of projection keys: 16.6 MB for
 * n = 2000, P = 32) and frees it before returning; borrows the images only
 * during the call. GF_EINVAL naming the problem for
 * bad shapes, mismatched sets, a non-finite float pixel or a bad config;
 * GF_ENOMEM. A worker thread that cannot be started only means fewer
 * workers. */
gf_status gf_swd(const gf_swd_images *a, const gf_swd_images *b,
                 const gf_swd_config *cfg, gf_swd_result *out, gf_err *err);

/* The metric key of level l ("swd/28") or, for l < 0, of the average
 * ("swd/avg") into buf (NUL-terminated). Returns buf, or NULL when buf is too
 * small or l is out of range. */
char *gf_swd_metric_name(const gf_swd_result *r, int l, char *buf,
                         size_t cap);

#endif
