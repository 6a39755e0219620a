/* cli_generate.c - `ganflow generate`: a PNG from a registered version
 * without a server, through ganflow-serve's resolve, download cache and
 * load (gfs/slot.h) and the generator both use (gf/generator.h). See
 * gf/cli.h. */
#include <stdlib.h>
#include <string.h>

#include "gf/atomic_file.h"
#include "gf/cli.h"
#include "gf/fs.h"
#include "gf/generator.h"
#include "gfs/slot.h"

gf_status gf_cli_generate_check(const gf_cli_generate_opts *o, gf_err *err) {
  if (!o->uri || !o->out_path || !o->cache_dir || o->n < 1 || o->n > 1024 ||
      o->threads < 1)
    return gf_fail(err, GF_EINVAL, "generate: bad arguments");
  /* The PNG is written through "<FILE>.tmp.XXXXXX" (gf/atomic_file.h). */
  GF_TRY(gf_path_check("-o", o->out_path, sizeof ".tmp.XXXXXX" - 1, err));
  return gfs_cache_dir_check(o->cache_dir, "--cache-dir", err);
}

gf_status gf_cli_generate(mlflow_client *c, const gf_cli_generate_opts *o,
                          FILE *out, gf_err *err) {
  GF_TRY(gf_cli_generate_check(o, err));
  gfs_model_ref ref;
  GF_TRY(gfs_model_resolve(c, o->uri, &ref, err));
  const char *name = ref.name, *version = ref.version;
  /* Passes of up to 16 rows, as ganflow-serve's default: the bytes are
   * the same at any pass size (batch-invariant kernels), this bounds the
   * activations and the load-time probe. */
  int pass = o->n < 16 ? o->n : 16;
  gf_generator_opts mo = {GF_BACKEND_CPU, 0,    1, o->threads, pass, NULL,
                          o->precision};
  gf_generator *m = NULL;
  GF_TRY(gfs_cache_load(c, o->cache_dir, name, version, &mo, &m, err));
  gf_status st = GF_OK;
  float *z = malloc((size_t)o->n * (size_t)m->cfg.z_dim * sizeof *z);
  float *img = malloc((size_t)o->n * m->image_numel * sizeof *img);
  uint8_t *png = NULL;
  size_t len = 0;
  int32_t *lab = o->cls ? malloc((size_t)o->n * sizeof *lab) : NULL;
  float *mz = o->mix_set ? malloc((size_t)o->n * (size_t)m->cfg.z_dim *
                                  sizeof *mz) : NULL;
  if (!z || !img || (o->cls && !lab) || (o->mix_set && !mz))
    st = gf_fail(err, GF_ENOMEM, "out of memory");
  if (!st && o->cls)
    st = gf_generator_class_labels(m, o->cls, o->n, lab, err);
  if (!st) st = gf_generator_latents(m, &o->seed, o->n, 0, z, err);
  /* the style: ganflow-serve's psi=, trunc_cutoff=, noise=, mix=,
   * mix_from= (random noise and mixing latents: sample k of their seed) */
  gf_gen_style style;
  gf_gen_style_default(&style);
  style.psi = (float)o->psi;
  style.trunc_cutoff = o->trunc_cutoff;
  style.noise = (gf_sg2_noise)o->noise;
  style.noise_seed = o->seed;
  if (!st && o->mix_set) {
    st = gf_generator_latents(m, &o->mix, o->n, 0, mz, err);
    style.mix_z = mz;
    style.mix_from = o->mix_from;
  }
  if (!st)
    st = gf_generator_run_styled(m, 0, z, lab, &style, o->n, img, err);
  if (!st) st = gf_generator_png(m, img, o->n, &png, &len, err);
  if (!st) st = gf_atomic_write_file(o->out_path, png, len, err);
  if (!st)
    fprintf(out, "%s: %d image%s of %s version %s, seed %llu%s%s (%zu "
            "bytes)\n", o->out_path, o->n, o->n == 1 ? "" : "s", name,
            version, (unsigned long long)o->seed, o->cls ? ", class " : "",
            o->cls ? o->cls : "", len);
  free(png);
  free(lab);
  free(mz);
  free(img);
  free(z);
  gf_generator_unref(m);
  return st;
}
