/* checkpoint.c - training checkpoints (gf/checkpoint.h): the tensor layout
 * of a gf_gan in a checkpoint file, save (atomic write through
 * gf_ckpt_write, then keep-K pruning), the search for the newest good
 * checkpoint of a directory, and a load that verifies everything before it
 * copies a byte. Not here: `ganflow inspect` (inspect.c). */
#include "gf/checkpoint.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gf/note.h"
#include "gf/sg2_gan.h"
#include "gf/text.h"

/* ---- layout ------------------------------------------------------------- */

/* One tensor of the checkpoint and where its bytes live in the gan. */
typedef struct ckpt_slot {
  char name[GF_CKPT_TENSOR_NAME_MAX]; /* file tensor name */
  gf_st_dtype dtype;                  /* F32, or I64 for the step counters */
  int ndim;                           /* 0 (scalar) .. GF_MAX_DIMS */
  int64_t shape[GF_MAX_DIMS];
  void *data;                         /* gan memory (step counters: adam_step) */
  size_t nbytes;
} ckpt_slot;

/* Every tensor of a gan's checkpoint, G first then D, each network in
 * state_dict order, then the two step counters. */
typedef struct ckpt_layout {
  ckpt_slot slots[GF_CKPT_MAX_TENSORS];
  size_t n;
  int64_t adam_step[2]; /* G, D: save copies them here from the gan; load
                           decodes the file's values here */
} ckpt_layout;

static gf_status add_slot(ckpt_layout *L, const char *name, const char *suffix,
                          gf_st_dtype dt, int ndim, const int64_t *shape,
                          void *data, size_t nbytes, gf_err *err) {
  if (L->n >= GF_CKPT_MAX_TENSORS)
    return gf_fail(err, GF_EINVAL, "checkpoint: more than %d tensors",
                   GF_CKPT_MAX_TENSORS);
  ckpt_slot *s = &L->slots[L->n];
  int k = snprintf(s->name, sizeof s->name, "%s%s", name, suffix);
  if (!gf_fits(k, sizeof s->name))
    return gf_fail(err, GF_EINVAL, "checkpoint: tensor name %s%s too long", name,
                   suffix);
  s->dtype = dt;
  s->ndim = ndim;
  for (int i = 0; i < GF_MAX_DIMS; i++) s->shape[i] = i < ndim ? shape[i] : 0;
  s->data = data;
  s->nbytes = nbytes;
  L->n++;
  return GF_OK;
}

static gf_status add_net(ckpt_layout *L, const gf_net *net, const char *which,
                         gf_err *err) {
  if (!net->training)
    return gf_fail(err, GF_EINVAL,
                   "checkpoint: %s was not built for training (no Adam state)",
                   which);
  for (int i = 0; i < net->n_tensors; i++) {
    const gf_param *p = &net->tensors[i];
    const gf_tensor *v = &p->value;
    if (v->device != GF_DEV_CPU)
      return gf_fail(err, GF_EUNSUPPORTED,
                     "checkpoint: %s is not in host memory", p->name);
    if (v->dtype != GF_F32)
      return gf_fail(err, GF_EUNSUPPORTED, "checkpoint: %s is %s, not f32",
                     p->name, gf_dtype_name(v->dtype));
    size_t nb = gf_tensor_nbytes(v);
    gf_status st = add_slot(L, p->name, "", GF_ST_F32, v->ndim, v->shape,
                            v->data, nb, err);
    if (st != GF_OK) return st;
    if (!p->trainable) continue;
    if (!p->adam_m.data || !p->adam_v.data)
      return gf_fail(err, GF_EINVAL, "checkpoint: %s has no Adam moments",
                     p->name);
    st = add_slot(L, p->name, ".adam_m", GF_ST_F32, v->ndim, v->shape,
                  p->adam_m.data, nb, err);
    if (st == GF_OK)
      st = add_slot(L, p->name, ".adam_v", GF_ST_F32, v->ndim, v->shape,
                    p->adam_v.data, nb, err);
    if (st != GF_OK) return st;
  }
  return GF_OK;
}

/* The EMA generator's parameters and BN running statistics, as
 * "g_ema.main.0.weight", ... (G's names with g_ema for g). */
static gf_status add_ema(ckpt_layout *L, const gf_net *net, gf_err *err) {
  for (int i = 0; i < net->n_tensors; i++) {
    const gf_param *p = &net->tensors[i];
    const gf_tensor *v = &p->value;
    if (v->device != GF_DEV_CPU)
      return gf_fail(err, GF_EUNSUPPORTED, "checkpoint: the EMA of %s is not in host memory",
                     p->name);
    GF_TRY(add_slot(L, "g_ema", p->name + 1, GF_ST_F32, v->ndim, v->shape, v->data,
                    gf_tensor_nbytes(v), err));
  }
  return GF_OK;
}

/* Describes gan's checkpoint tensors in L. L's step counters are left to
 * the caller. The slots point into gan (cast from const: save only reads
 * them; load writes through them after verifying the whole file). */
static gf_status build_layout(ckpt_layout *L, const gf_gan *gan, gf_err *err) {
  memset(L, 0, sizeof *L);
  gf_status st = add_net(L, &gan->g, "the generator", err);
  if (st == GF_OK) st = add_net(L, &gan->d, "the discriminator", err);
  if (st == GF_OK && gan->g_ema.layers) st = add_ema(L, &gan->g_ema, err);
  if (st == GF_OK)
    st = add_slot(L, "g.adam_step", "", GF_ST_I64, 0, NULL, &L->adam_step[0],
                  sizeof(int64_t), err);
  if (st == GF_OK)
    st = add_slot(L, "d.adam_step", "", GF_ST_I64, 0, NULL, &L->adam_step[1],
                  sizeof(int64_t), err);
  return st;
}

/* ---- directory listing -------------------------------------------------- */

int gf_checkpoint_parse_name(const char *name, int64_t *step) {
  static const char prefix[] = "ckpt-";
  if (strncmp(name, prefix, sizeof prefix - 1) != 0) return 0;
  const char *p = name + sizeof prefix - 1;
  int64_t v = 0;
  int digits = 0;
  while (*p >= '0' && *p <= '9') {
    int d = *p - '0';
    if (v > (INT64_MAX - d) / 10) return 0;
    v = v * 10 + d;
    digits++;
    p++;
  }
  if (!digits) return 0;
  /* Only the canonical spelling: what GF_CKPT_NAME_FMT makes of v (at most
   * 19 digits: 37 characters). */
  char canon[64];
  GF_FORMAT_FITS(canon, sizeof canon, GF_CKPT_NAME_FMT, (long long)v);
  if (strcmp(canon, name) != 0) return 0;
  *step = v;
  return 1;
}

/* A checkpoint file found in a directory. */
typedef struct ckpt_entry {
  int64_t step;
  char *name; /* malloc'd file name */
} ckpt_entry;

static void free_entries(ckpt_entry *e, size_t n) {
  for (size_t i = 0; i < n; i++) free(e[i].name);
  free(e);
}

static int cmp_step_desc(const void *a, const void *b) {
  int64_t x = ((const ckpt_entry *)a)->step, y = ((const ckpt_entry *)b)->step;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* The checkpoint files of dir (canonical names only; temporary files and
 * anything else ignored), newest step first. *out is malloc'd (free with
 * free_entries). GF_ENOTFOUND when dir does not exist. */
static gf_status list_checkpoints(const char *dir, ckpt_entry **out, size_t *n,
                                  gf_err *err) {
  *out = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT || errno == ENOTDIR)
      return gf_fail(err, GF_ENOTFOUND, "checkpoint: no directory %s", dir);
    return gf_fail(err, GF_EIO, "checkpoint: cannot open directory %s: %s", dir,
                   strerror(errno));
  }
  ckpt_entry *v = NULL;
  size_t len = 0, cap = 0;
  gf_status st = GF_OK;
  struct dirent *e;
  errno = 0;
  while ((e = readdir(d)) != NULL) {
    int64_t step;
    if (!gf_checkpoint_parse_name(e->d_name, &step)) continue;
    if (len == cap) {
      size_t nc = cap ? cap * 2 : 16;
      ckpt_entry *nv = realloc(v, nc * sizeof *nv);
      if (!nv) {
        st = gf_fail(err, GF_ENOMEM, "checkpoint: listing %s", dir);
        break;
      }
      v = nv;
      cap = nc;
    }
    v[len].step = step;
    v[len].name = strdup(e->d_name);
    if (!v[len].name) {
      st = gf_fail(err, GF_ENOMEM, "checkpoint: listing %s", dir);
      break;
    }
    len++;
    errno = 0;
  }
  if (st == GF_OK && errno != 0)
    st = gf_fail(err, GF_EIO, "checkpoint: reading directory %s: %s", dir,
                 strerror(errno));
  closedir(d);
  if (st != GF_OK) {
    free_entries(v, len);
    return st;
  }
  if (len > 1) qsort(v, len, sizeof *v, cmp_step_desc);
  *out = v;
  *n = len;
  return GF_OK;
}

static gf_status join_path(char *buf, size_t cap, const char *dir,
                           const char *name, gf_err *err) {
  return gf_format(buf, cap, err, "checkpoint path", "%s/%s", dir, name);
}

static gf_status copy_out(char *dst, size_t cap, const char *src, gf_err *err) {
  size_t n = strlen(src);
  if (!dst || n >= cap)
    return gf_fail(err, GF_EINVAL, "checkpoint: path buffer of %zu bytes too "
                   "small for %s", cap, src);
  memcpy(dst, src, n + 1);
  return GF_OK;
}

/* Keeps the checkpoint of `written` and the newest keep-1 of those with a
 * lower step; deletes the others, including higher steps (left from a
 * timeline abandoned when an older checkpoint was resumed: the file just
 * written must be the newest), and stale temporary files of checkpoint
 * names. */
static gf_status prune(const char *dir, int64_t written, int keep, gf_err *err) {
  ckpt_entry *v;
  size_t n;
  gf_status st = list_checkpoints(dir, &v, &n, err);
  if (st != GF_OK) return st;
  char path[GF_CKPT_PATH_MAX];
  int kept_older = 0;
  for (size_t i = 0; i < n && st == GF_OK; i++) {
    if (v[i].step == written) continue;
    if (v[i].step < written && kept_older < keep - 1) {
      kept_older++;
      continue;
    }
    st = join_path(path, sizeof path, dir, v[i].name, err);
    if (st == GF_OK && unlink(path) != 0 && errno != ENOENT)
      st = gf_fail(err, GF_EIO, "checkpoint: cannot delete old %s: %s", path,
                   strerror(errno));
  }
  free_entries(v, n);
  if (st != GF_OK) return st;
  /* Temporary files of interrupted writes: "ckpt-<step>.safetensors.tmp.*". */
  DIR *d = opendir(dir);
  if (!d) return GF_OK; /* nothing more to tidy */
  struct dirent *e;
  while ((e = readdir(d)) != NULL && st == GF_OK) {
    const char *t = strstr(e->d_name, ".safetensors.tmp.");
    if (strncmp(e->d_name, "ckpt-", 5) != 0 || !t) continue;
    st = join_path(path, sizeof path, dir, e->d_name, err);
    if (st == GF_OK && unlink(path) != 0 && errno != ENOENT)
      st = gf_fail(err, GF_EIO, "checkpoint: cannot delete stale %s: %s", path,
                   strerror(errno));
  }
  closedir(d);
  return st;
}

/* ---- save --------------------------------------------------------------- */

gf_status gf_checkpoint_save(const char *dir, const gf_gan *gan,
                             const gf_ckpt_meta *meta, int keep,
                             char *path_out, size_t path_cap, gf_err *err) {
  if (!dir || !*dir || !gan || !meta)
    return gf_fail(err, GF_EINVAL, "checkpoint save: NULL argument");
  if (!gf_model_config_equal(&meta->config, &gan->cfg))
    return gf_fail(err, GF_EINVAL,
                   "checkpoint save: metadata config differs from the model's");
  if (meta->step < 0)
    return gf_fail(err, GF_EINVAL, "checkpoint save: step is negative");
  char name[64], path[GF_CKPT_PATH_MAX];
  GF_TRY(gf_format(name, sizeof name, err, "checkpoint name", GF_CKPT_NAME_FMT,
                   (long long)meta->step));
  gf_status st = join_path(path, sizeof path, dir, name, err);
  if (st != GF_OK) return st;
  if (path_out && strlen(path) >= path_cap)
    return gf_fail(err, GF_EINVAL,
                   "checkpoint save: path buffer of %zu bytes too small for %s",
                   path_cap, path);
  ckpt_layout *L = malloc(sizeof *L);
  gf_st_tensor_desc *desc = malloc(GF_CKPT_MAX_TENSORS * sizeof *desc);
  if (!L || !desc) {
    free(L);
    free(desc);
    return gf_fail(err, GF_ENOMEM, "checkpoint save: layout");
  }
  st = build_layout(L, gan, err);
  if (st == GF_OK) {
    L->adam_step[0] = gan->adam_step_g;
    L->adam_step[1] = gan->adam_step_d;
    for (size_t i = 0; i < L->n; i++) {
      desc[i].name = L->slots[i].name;
      desc[i].dtype = L->slots[i].dtype;
      desc[i].ndim = L->slots[i].ndim;
      desc[i].shape = L->slots[i].shape;
      desc[i].data = L->slots[i].data;
    }
    st = gf_ckpt_write(path, desc, L->n, meta, err);
  }
  free(desc);
  free(L);
  if (st != GF_OK) return st;
  if (path_out) memcpy(path_out, path, strlen(path) + 1);
  /* The checkpoint is durable from here on; a pruning failure is reported
   * (the caller may go on: the new file is complete). */
  if (keep > 0) st = prune(dir, meta->step, keep, err);
  return st;
}

gf_status gf_checkpoint_save_sg2(const char *dir, const gf_sg2_gan *gan,
                                 const gf_ckpt_meta *meta, int keep,
                                 char *path_out, size_t path_cap, gf_err *err) {
  if (!dir || !*dir || !gan || !meta)
    return gf_fail(err, GF_EINVAL, "checkpoint save: NULL argument");
  if (meta->config.architecture != GF_ARCH_STYLEGAN2)
    return gf_fail(err, GF_EINVAL, "checkpoint save: a stylegan2 state with "
                   "a %s config", gf_arch_name(meta->config.architecture));
  if (meta->step < 0)
    return gf_fail(err, GF_EINVAL, "checkpoint save: step is negative");
  char name[64], path[GF_CKPT_PATH_MAX];
  GF_TRY(gf_format(name, sizeof name, err, "checkpoint name", GF_CKPT_NAME_FMT,
                   (long long)meta->step));
  GF_TRY(join_path(path, sizeof path, dir, name, err));
  if (path_out && strlen(path) >= path_cap)
    return gf_fail(err, GF_EINVAL,
                   "checkpoint save: path buffer of %zu bytes too small for %s",
                   path_cap, path);
  gf_ckpt_meta_kv kv;
  GF_TRY(gf_ckpt_meta_to_kv(meta, &kv, err));
  gf_status st = gf_sg2_gan_save_meta(gan, path, kv.kv, kv.n, err);
  gf_ckpt_meta_kv_free(&kv);
  if (st != GF_OK) return st;
  if (path_out) memcpy(path_out, path, strlen(path) + 1);
  if (keep > 0) st = prune(dir, meta->step, keep, err);
  return st;
}

gf_status gf_checkpoint_load_sg2(const char *path, gf_sg2_gan *gan,
                                 gf_ckpt_meta *meta_out, gf_err *err) {
  if (!path || !gan)
    return gf_fail(err, GF_EINVAL, "checkpoint load: NULL argument");
  gf_st_file f;
  gf_st_file_init(&f);
  gf_ckpt_meta meta;
  GF_TRY(gf_ckpt_open(path, &f, &meta, err));
  bool state = gf_st_meta_get(&f, GF_SG2_STATE_FORMAT_KEY) != NULL;
  gf_st_file_free(&f);
  if (meta.config.architecture != GF_ARCH_STYLEGAN2 || !state)
    return gf_fail(err, GF_EINVAL, "%s is a checkpoint of a %s model, not a "
                   "stylegan2 training state: use its --model or another "
                   "--checkpoint-dir", path,
                   gf_arch_name(meta.config.architecture));
  GF_TRY(gf_sg2_gan_load(gan, path, err));
  if (meta_out) *meta_out = meta;
  return GF_OK;
}

/* ---- find latest -------------------------------------------------------- */

gf_status gf_checkpoint_find_latest(const char *dir, char *path_out,
                                    size_t path_cap, gf_ckpt_meta *meta_out,
                                    int *n_skipped, char *skip_msg,
                                    size_t skip_cap, gf_err *err) {
  if (n_skipped) *n_skipped = 0;
  if (skip_msg && skip_cap) skip_msg[0] = '\0';
  if (!dir || !*dir || !path_out)
    return gf_fail(err, GF_EINVAL, "checkpoint find: NULL argument");
  ckpt_entry *v;
  size_t n;
  gf_status st = list_checkpoints(dir, &v, &n, err);
  if (st != GF_OK) return st;
  char path[GF_CKPT_PATH_MAX];
  int skipped = 0;
  gf_status result = GF_ENOTFOUND;
  for (size_t i = 0; i < n; i++) {
    gf_err e;
    memset(&e, 0, sizeof e);
    gf_st_file f;
    gf_st_file_init(&f);
    gf_ckpt_meta m;
    st = join_path(path, sizeof path, dir, v[i].name, &e);
    if (st == GF_OK) st = gf_ckpt_open(path, &f, &m, &e);
    gf_st_file_free(&f); /* the bytes are not needed: only the verdict */
    if (st == GF_OK && m.step != v[i].step)
      st = gf_fail(&e, GF_EFORMAT,
                   "checkpoint %s: metadata step %lld differs from the name",
                   path, (long long)m.step);
    if (st != GF_OK) {
      skipped++;
      if (skip_msg && skip_cap) gf_note(skip_msg, skip_cap, "%s: %s", v[i].name, e.msg);
      continue;
    }
    result = copy_out(path_out, path_cap, path, err);
    if (result == GF_OK && meta_out) *meta_out = m;
    break;
  }
  if (n_skipped) *n_skipped = skipped;
  free_entries(v, n);
  if (result == GF_ENOTFOUND)
    return gf_fail(err, GF_ENOTFOUND,
                   "checkpoint: no good checkpoint in %s (%d skipped)", dir,
                   skipped);
  return result;
}

/* ---- load --------------------------------------------------------------- */

/* The longest text config_diff writes: a field name, two ints or two
 * architecture names, and fixed words (about 70 characters). */
#define CONFIG_DIFF_MAX 160

/* Names the first differing field of two configs into buf[CONFIG_DIFF_MAX]. */
static void config_diff(const gf_model_config *file, const gf_model_config *model,
                        char buf[CONFIG_DIFF_MAX]) {
#define GF_DIFF_INT(field)                                                     \
  if (file->field != model->field) {                                           \
    GF_FORMAT_FITS(buf, CONFIG_DIFF_MAX,                                       \
                   #field " %d in the checkpoint, %d in the model",            \
                   (int)file->field, (int)model->field);                       \
    return;                                                                    \
  }
  if (file->architecture != model->architecture) {
    GF_FORMAT_FITS(buf, CONFIG_DIFF_MAX,
                   "architecture %s in the checkpoint, %s in the model",
                   gf_arch_name(file->architecture),
                   gf_arch_name(model->architecture));
    return;
  }
  GF_DIFF_INT(format_version)
  GF_DIFF_INT(z_dim)
  GF_DIFF_INT(image_height)
  GF_DIFF_INT(image_width)
  GF_DIFF_INT(image_channels)
  GF_DIFF_INT(num_classes)
  GF_DIFF_INT(ngf)
  GF_DIFF_INT(ndf)
  GF_DIFF_INT(pixel_norm)
  GF_DIFF_INT(spectral_norm)
#undef GF_DIFF_INT
  GF_FORMAT_FITS(buf, CONFIG_DIFF_MAX, "configs differ");
}

static int64_t read_i64_le(const void *p) {
  const uint8_t *b = p;
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | b[i];
  return (int64_t)v;
}

/* Checks that f holds exactly L's tensors with L's dtypes and shapes, and
 * decodes the step counters into L->adam_step. Touches nothing else. */
static gf_status verify_tensors(const char *path, const gf_st_file *f,
                                ckpt_layout *L, gf_err *err) {
  for (size_t i = 0; i < L->n; i++) {
    const ckpt_slot *s = &L->slots[i];
    const gf_st_tensor *t = gf_st_find(f, s->name);
    if (!t)
      return gf_fail(err, GF_EFORMAT, "checkpoint %s: tensor %s missing", path,
                     s->name);
    if (t->dtype != s->dtype)
      return gf_fail(err, GF_EFORMAT, "checkpoint %s: tensor %s is %s, expected %s",
                     path, s->name, gf_st_dtype_name(t->dtype),
                     gf_st_dtype_name(s->dtype));
    int same = t->ndim == s->ndim;
    for (int d = 0; same && d < s->ndim; d++) same = t->shape[d] == s->shape[d];
    if (!same || t->nbytes != s->nbytes) {
      char a[GF_ST_SHAPE_TEXT_MAX], b[GF_ST_SHAPE_TEXT_MAX];
      gf_st_shape_text(t->shape, t->ndim, a);
      gf_st_shape_text(s->shape, s->ndim, b);
      return gf_fail(err, GF_EFORMAT,
                     "checkpoint %s: tensor %s has shape %s, the model %s",
                     path, s->name, a, b);
    }
  }
  if (f->n_tensors != L->n) {
    for (size_t j = 0; j < f->n_tensors; j++) {
      size_t i = 0;
      while (i < L->n && strcmp(L->slots[i].name, f->tensors[j].name) != 0) i++;
      if (i == L->n)
        return gf_fail(err, GF_EFORMAT,
                       "checkpoint %s: unexpected tensor %s", path,
                       f->tensors[j].name);
    }
    return gf_fail(err, GF_EFORMAT, "checkpoint %s: %zu tensors, expected %zu",
                   path, f->n_tensors, L->n);
  }
  for (int k = 0; k < 2; k++) {
    const gf_st_tensor *t = gf_st_find(f, k ? "d.adam_step" : "g.adam_step");
    L->adam_step[k] = read_i64_le(t->data);
    if (L->adam_step[k] < 0)
      return gf_fail(err, GF_EFORMAT, "checkpoint %s: %s is negative", path,
                     t->name);
  }
  return GF_OK;
}

gf_status gf_checkpoint_load(const char *path, gf_gan *gan,
                             gf_ckpt_meta *meta_out, gf_err *err) {
  if (!path || !*path || !gan)
    return gf_fail(err, GF_EINVAL, "checkpoint load: NULL argument");
  ckpt_layout *L = malloc(sizeof *L);
  if (!L) return gf_fail(err, GF_ENOMEM, "checkpoint load: layout");
  gf_status st = build_layout(L, gan, err);
  if (st != GF_OK) {
    free(L);
    return st;
  }
  gf_st_file f;
  gf_st_file_init(&f);
  gf_ckpt_meta m;
  st = gf_ckpt_open(path, &f, &m, err);
  if (st == GF_OK && !gf_model_config_equal(&m.config, &gan->cfg)) {
    char diff[CONFIG_DIFF_MAX];
    config_diff(&m.config, &gan->cfg, diff);
    st = gf_fail(err, GF_EINVAL, "checkpoint %s: config mismatch: %s", path, diff);
  }
  if (st == GF_OK) st = verify_tensors(path, &f, L, err);
  if (st == GF_OK) {
    /* Everything checked: now copy (the counters are decoded already). */
    for (size_t i = 0; i < L->n; i++) {
      if (L->slots[i].dtype != GF_ST_F32) continue; /* the counters */
      const gf_st_tensor *t = gf_st_find(&f, L->slots[i].name);
      if (L->slots[i].nbytes) memcpy(L->slots[i].data, t->data, L->slots[i].nbytes);
    }
    gan->adam_step_g = L->adam_step[0];
    gan->adam_step_d = L->adam_step[1];
    if (meta_out) *meta_out = m;
  }
  gf_st_file_free(&f);
  free(L);
  return st;
}
