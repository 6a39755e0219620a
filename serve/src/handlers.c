/* handlers.c - what each endpoint answers: probes, server and model
 * metadata (KServe V2) and metrics on the polling thread; generation (GET
 * generate, V2 infer, MLflow invocations) on a worker: parsing against the
 * loaded version, latents, shared passes. The images' answer itself is
 * answer.c's. Errors are {"error": "..."} with the status of DESIGN §2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/text.h"
#include "server_internal.h"

/* The X-Model-* headers of r's answer. Slots refuse names and aliases
 * longer than the header fields and versions come from a gfs_model_ref,
 * so they fit; one that does not is answered 500 (no header is cut) and 0
 * returned. */
static int set_model_headers(gfs_req *r, const gfs_slot *sl,
                             const gf_generator *m) {
  const char *alias = sl->alias ? sl->alias : "";
  if (gf_fits(snprintf(r->model, sizeof r->model, "%s", m->name),
              sizeof r->model) &&
      gf_fits(snprintf(r->version, sizeof r->version, "%s", m->version),
              sizeof r->version) &&
      gf_fits(snprintf(r->alias, sizeof r->alias, "%s", alias),
              sizeof r->alias))
    return 1;
  r->model[0] = r->version[0] = r->alias[0] = '\0';
  gfs_error(r, 500, "model '%s' version '%s' (alias '%s'): too long for the "
            "X-Model-* headers", m->name, m->version, alias);
  return 0;
}

/* 1 when r asks for no version or for m's; else answers r 404. */
static int version_ok(gfs_req *r, const gf_generator *m) {
  if (!r->want_version[0] || strcmp(r->want_version, m->version) == 0)
    return 1;
  gfs_error(r, 404, "model '%s' version '%s' is not served here (the "
            "loaded version is %s)", m->name, r->want_version, m->version);
  return 0;
}

static void server_meta(gfs_req *r) {
  gfs_answer_text(r, 200, "application/json",
              "{\"name\": \"ganflow-serve\", \"version\": \"" GFS_VERSION
              "\", \"extensions\": [\"binary_tensor_data\", "
              "\"parameters\"]}\n");
}

static void model_meta(gfs_req *r, gfs_slot *sl) {
  gf_generator *m = gfs_slot_acquire(sl);
  if (!m) {
    r->retry_after = 1;
    gfs_error(r, 503, "model '%s' is not loaded yet", sl->name);
    return;
  }
  if (!version_ok(r, m)) {
    gf_generator_unref(m);
    return;
  }
  const gf_model_config *c = &m->cfg;
  gf_strbuf b;
  gf_strbuf_init(&b);
  gf_strbuf_puts(&b, "{\"name\": ");
  gf_strbuf_json_cstr(&b, m->name);
  gf_strbuf_puts(&b, ", \"versions\": [");
  gf_strbuf_json_cstr(&b, m->version);
  gf_strbuf_puts(&b, "], \"platform\": \"ganflow\", \"uri\": ");
  gf_strbuf_json_cstr(&b, sl->uri);
  gf_strbuf_puts(&b, ", \"alias\": ");
  if (sl->alias) gf_strbuf_json_cstr(&b, sl->alias);
  else gf_strbuf_puts(&b, "null");
  gf_strbuf_printf(&b,
                   ", \"architecture\": \"%s\", \"inputs\": [{\"name\": "
                   "\"seed\", \"datatype\": \"INT64\", \"shape\": [-1]}, "
                   "{\"name\": \"z\", \"datatype\": \"FP32\", \"shape\": [-1, "
                   "%d]}%s], \"outputs\": [{\"name\": \"image\", \"datatype\": "
                   "\"FP32\", \"shape\": [-1, %d, %d, %d]}], \"max_images\": "
                   "%d, \"num_classes\": %d", gf_arch_name(c->architecture),
                   c->z_dim,
                   m->num_classes > 0 ? ", {\"name\": \"class\", "
                   "\"datatype\": \"INT64\", \"shape\": [-1]}" : "",
                   c->image_channels, c->image_height, c->image_width,
                   r->max_images, m->num_classes);
  if (m->class_names) {
    gf_strbuf_puts(&b, ", \"class_names\": [");
    for (int k = 0; k < m->n_class_names; k++) {
      if (k) gf_strbuf_puts(&b, ", ");
      gf_strbuf_json_cstr(&b, m->class_names[k]);
    }
    gf_strbuf_puts(&b, "]");
  }
  gf_strbuf_puts(&b, "}\n");
  int headers_ok = set_model_headers(r, sl, m);
  gf_generator_unref(m);
  if (headers_ok) gfs_answer_strbuf(r, 200, "application/json", &b);
  else gf_strbuf_free(&b);
}

void gfs_handle_inline(gfs_server *s, gfs_req *r) {
  int ready = gfs_slots_ready(s->slots, s->n_slots);
  switch (r->route) {
    case GFS_R_PING:
    case GFS_R_HEALTH:
      if (ready) gfs_answer_text(r, 200, "text/plain", "\n");
      else gfs_error(r, 503, "models are not loaded yet");
      break;
    case GFS_R_VERSION:
      gfs_answer_text(r, 200, "text/plain", GFS_VERSION "\n");
      break;
    case GFS_R_LIVE:
      gfs_answer_text(r, 200, "application/json", "{\"live\": true}\n");
      break;
    case GFS_R_READY:
      gfs_answer_text(r, ready ? 200 : 503, "application/json",
                  ready ? "{\"ready\": true}\n" : "{\"ready\": false}\n");
      break;
    case GFS_R_MODEL_READY: {
      gf_generator *m = gfs_slot_acquire(r->slot);
      if (!m || version_ok(r, m))
        gfs_answer_text(r, m ? 200 : 503, "application/json",
                    m ? "{\"ready\": true}\n" : "{\"ready\": false}\n");
      gf_generator_unref(m);
      break;
    }
    case GFS_R_SERVER_META:
      server_meta(r);
      break;
    case GFS_R_MODEL_META:
      model_meta(r, r->slot);
      break;
    case GFS_R_METRICS: {
      char *text = NULL;
      size_t len = 0;
      gf_err e;
      if (gfs_metrics_render(&s->metrics, s->slots, s->n_slots, &text, &len,
                             &e) != GF_OK)
        gfs_error(r, 500, "%s", e.msg);
      else
        gfs_answer(r, 200, "text/plain; version=0.0.4", text, len);
      break;
    }
    case GFS_R_PAGE:
      gfs_handle_page(s, r);
      break;
    case GFS_R_FAVICON:
      /* No icon, and no error: a browser's own request for one is not a
       * failed request of the page. */
      gfs_answer(r, 204, "image/x-icon", NULL, 0);
      break;
    default:
      gfs_error(r, 500, "route not handled");
  }
}

/* A generation request between parsing and answering. */
typedef struct gen_job {
  gfs_req *r;
  gf_generator *m;    /* a reference of the job's own */
  gfs_infer_req ir;
  float *z;           /* n * z_dim latents: ir.z or zown */
  float *zown;        /* malloc'd latents made from seeds */
  int32_t *labels;    /* n classes (malloc'd) for a conditional model,
                         else NULL */
  int n;
  float *img;         /* n images, set by the pass(es) */
  gf_gen_style style; /* the request's (stylegan2), checked against m */
  float *mz;          /* malloc'd mixing latents (style.mix_z), or NULL */
} gen_job;

/* Releases what job_prepare gave j (latents, parsed body, model ref). */
static void job_free(gen_job *j) {
  free(j->zown);
  free(j->mz);
  free(j->labels);
  gfs_infer_req_free(&j->ir);
  gf_generator_unref(j->m);
}

/* Class k of m for an index a body gave; 0 (r answered 400) when out of
 * range. */
static int class_index_ok(gfs_req *r, const gf_generator *m, int row,
                          int64_t v) {
  if (v >= 0 && v < m->num_classes) return 1;
  gfs_error(r, 400, "row %d: class %lld is outside 0..%d (the classes of "
            "model '%s')", row, (long long)v, m->num_classes - 1, m->name);
  return 0;
}

/* Sets j->labels (j->n rows) from r's classes: GET's class= (one class for
 * every image, or a list of c classes, c dividing n, image k taking item
 * k / (n / c): gf_generator_class_labels) or the bodies' class per row. A conditional model needs a
 * class for every row, an unconditional one takes none. Returns 1, or 0
 * with r answered 400 (or 500). */
static int job_labels(gfs_req *r, gf_generator *m, gen_job *j) {
  int given = r->route == GFS_R_GENERATE ? r->args.has_class
                                         : j->ir.cls != NULL;
  if (m->num_classes == 0) {
    if (!given) return 1;
    gfs_error(r, 400, "class: model '%s' is not class-conditional and "
              "takes no class", m->name);
    return 0;
  }
  if (!given) {
    gfs_error(r, 400, "model '%s' is class-conditional: give a class, "
              "an index 0..%d%s (GET: class=; V2: a class input; "
              "/invocations: a class column)", m->name,
              m->num_classes - 1, m->class_names ? " or a name" : "");
    return 0;
  }
  if (!(j->labels = malloc((size_t)j->n * sizeof *j->labels))) {
    gfs_error(r, 500, "out of memory");
    return 0;
  }
  gf_err e;
  if (r->route == GFS_R_GENERATE) {
    if (gf_generator_class_labels(m, r->args.cls, j->n, j->labels, &e) ==
        GF_OK)
      return 1;
    gfs_error(r, 400, "%s", e.msg);
    return 0;
  }
  for (int k = 0; k < j->n; k++) {
    int64_t v = j->ir.cls[k];
    if (v == -2) {
      gfs_error(r, 400, "row %d: no class (model '%s' is class-conditional: "
                "every row needs one, 0..%d)", k, m->name,
                m->num_classes - 1);
      return 0;
    }
    if (v == -1) {
      int c;
      if (gf_generator_class_index(m, j->ir.cls_name + (size_t)k *
                                   (GFS_CLASS_MAX + 1), &c, &e) != GF_OK) {
        gfs_error(r, 400, "row %d: %s", k, e.msg);
        return 0;
      }
      j->labels[k] = c;
    } else if (!class_index_ok(r, m, k, v)) {
      return 0;
    } else {
      j->labels[k] = (int32_t)v;
    }
  }
  return 1;
}

/* j's style from the request's (GET's query or the V2 parameters), its
 * mixing latents made: image k's are sample k of the mix seed, its random
 * noise sample k of the request's seed (GET's seed=; a body's first row's
 * seed, 0 without seeds). Returns 1, or 0 with r answered 400 (a model
 * that cannot honour it, a value out of its range) or 500. */
static int job_style(gfs_req *r, gf_generator *m, gen_job *j) {
  const gfs_style *q = r->route == GFS_R_GENERATE ? &r->args.style
                                                  : &j->ir.style;
  gf_gen_style_default(&j->style);
  if (gfs_style_is_default(q)) return 1;
  j->style.psi = (float)q->psi;
  j->style.trunc_cutoff = q->trunc_cutoff;
  j->style.noise = q->noise == GFS_NOISE_RANDOM ? GF_SG2_NOISE_RANDOM
                   : q->noise == GFS_NOISE_NONE ? GF_SG2_NOISE_NONE
                                                : GF_SG2_NOISE_CONST;
  j->style.noise_seed = r->route == GFS_R_GENERATE ? r->args.seed
                        : j->ir.seeds             ? j->ir.seeds[0]
                                                  : 0;
  gf_err e;
  if (q->has_mix) {
    j->mz = malloc((size_t)j->n * (size_t)m->cfg.z_dim * sizeof *j->mz);
    if (!j->mz) {
      gfs_error(r, 500, "out of memory");
      return 0;
    }
    if (gf_generator_latents(m, &q->mix, j->n, 0, j->mz, &e) != GF_OK) {
      gfs_error(r, 400, "%s", e.msg);
      return 0;
    }
    j->style.mix_z = j->mz;
    j->style.mix_from = q->mix_from;
  }
  if (gf_generator_style_check(m, &j->style, &e) != GF_OK) {
    gfs_error(r, 400, "%s", e.msg);
    return 0;
  }
  return 1;
}

/* Parses r against the model its slot serves now and makes its latents.
 * Returns 1 with *j ready for a pass, or 0 when r has been answered (an
 * error) and *j holds nothing. */
static int job_prepare(gfs_server *s, gfs_req *r, gen_job *j) {
  memset(j, 0, sizeof *j);
  j->r = r;
  gfs_infer_req_init(&j->ir);
  gf_generator *m = gfs_slot_acquire(r->slot);
  if (!m) {
    r->retry_after = 1;
    gfs_error(r, 503, "model '%s' is not loaded yet", r->slot->name);
    return 0;
  }
  j->m = m;
  gf_err e;
  if (!set_model_headers(r, r->slot, m) || !version_ok(r, m)) goto fail;
  if (r->route == GFS_R_GENERATE) {
    j->n = r->args.n;
  } else {
    gf_status st = r->route == GFS_R_INFER
                       ? gfs_v2_parse_request(r->body, r->body_len,
                                              r->ihcl[0] ? r->ihcl : NULL,
                                              m->cfg.z_dim,
                                              s->cfg.max_images, &j->ir, &e)
                       : gfs_invocations_parse(r->body, r->body_len,
                                               m->cfg.z_dim,
                                               s->cfg.max_images, &j->ir, &e);
    if (st != GF_OK) {
      gfs_error(r, 400, "%s", e.msg);
      goto fail;
    }
    j->n = j->ir.n;
  }
  if (!job_labels(r, m, j) || !job_style(r, m, j)) goto fail;
  if (j->ir.z && !j->ir.seeds) {
    j->z = j->ir.z;
    return 1;
  }
  j->zown = malloc((size_t)j->n * (size_t)m->cfg.z_dim * sizeof *j->zown);
  if (!j->zown) {
    gfs_error(r, 500, "out of memory");
    goto fail;
  }
  gf_status st =
      j->ir.seeds
          ? gf_generator_latents(m, j->ir.seeds, j->n, 1, j->zown, &e)
          : gf_generator_latents(m, &r->args.seed, j->n, 0, j->zown, &e);
  if (st != GF_OK) {
    gfs_error(r, 400, "%s", e.msg);
    goto fail;
  }
  if (j->ir.row_z) /* rows of both kinds: the latents given replace */
    for (int k = 0; k < j->n; k++)
      if (j->ir.row_z[k])
        memcpy(j->zown + (size_t)k * (size_t)m->cfg.z_dim,
               j->ir.z + (size_t)k * (size_t)m->cfg.z_dim,
               (size_t)m->cfg.z_dim * sizeof *j->zown);
  j->z = j->zown;
  return 1;
fail:
  job_free(j);
  memset(j, 0, sizeof *j);
  return 0;
}

/* Runs rows latents (z, row-major) through m (in passes of at most its
 * max_batch, --preferred-batch, rows); img receives rows images. */
static gf_status run_passes(gfs_server *s, gf_generator *m, int worker,
                            const float *z, const int32_t *labels,
                            const gf_gen_style *style, int rows, float *img,
                            gf_err *err) {
  atomic_fetch_add(&s->metrics.passes,
                   (unsigned long)gf_generator_passes(m, rows));
  return gf_generator_run_styled(m, worker, z, labels, style, rows, img, err);
}

/* One pass group: the jobs js[0..n) share model js[0].m; their latents
 * are laid end to end and run together; each then gets its answer. */
static void run_group(gfs_server *s, gen_job *js, int n, int worker) {
  gf_generator *m = js[0].m;
  int styled = 0; /* a job with a style of its own runs alone */
  for (int i = 0; i < n; i++) styled |= !gf_gen_style_is_default(&js[i].style);
  if (n > 1 && (!m->batch_invariant || styled)) {
    /* swapped in while they were queued, and its rows may not share */
    for (int i = 0; i < n; i++) run_group(s, js + i, 1, worker);
    return;
  }
  size_t zd = (size_t)m->cfg.z_dim, inum = m->image_numel;
  int rows = 0;
  for (int i = 0; i < n; i++) rows += js[i].n;
  float *z = n == 1 ? js[0].z : malloc((size_t)rows * zd * sizeof *z);
  int cond = m->num_classes > 0;
  int32_t *lab = n == 1 || !cond ? js[0].labels
                                 : malloc((size_t)rows * sizeof *lab);
  float *img = malloc((size_t)rows * inum * sizeof *img);
  gf_err e;
  gf_status st = GF_OK;
  if (!z || !img || (cond && !lab))
    st = gf_fail(&e, GF_ENOMEM, "out of memory");
  if (st == GF_OK && n > 1)
    for (int i = 0, at = 0; i < n; at += js[i].n, i++) {
      memcpy(z + (size_t)at * zd, js[i].z, (size_t)js[i].n * zd * sizeof *z);
      if (cond)
        memcpy(lab + at, js[i].labels, (size_t)js[i].n * sizeof *lab);
    }
  if (st == GF_OK)
    st = run_passes(s, m, worker, z, lab, &js[0].style, rows, img, &e);
  if (st != GF_OK)
    gfs_log(s, "model %s version %s: %s", m->name, m->version, e.msg);
  if (n > 1) atomic_fetch_add(&s->metrics.shared_jobs, (unsigned long)n);
  for (int i = 0, at = 0; i < n; at += js[i].n, i++) {
    if (st != GF_OK) {
      gfs_error(js[i].r, 500, "generation failed: %s", e.msg);
      continue;
    }
    js[i].img = img + (size_t)at * inum;
    gfs_answer_images(s, js[i].r, js[i].m, &js[i].ir, js[i].img, js[i].n);
  }
  if (n > 1) free(z);
  if (n > 1 && cond) free(lab);
  free(img);
}

void gfs_handle_jobs(gfs_server *s, gfs_req **rs, int n, int worker) {
  gen_job js[GFS_MAX_SHARED];
  int k = 0;
  for (int i = 0; i < n && i < GFS_MAX_SHARED; i++)
    if (job_prepare(s, rs[i], &js[k])) k++;
  /* Jobs of one model version run together; a version swapped in while
   * they were queued makes a group of its own. */
  int done[GFS_MAX_SHARED] = {0};
  for (int i = 0; i < k; i++) {
    if (done[i]) continue;
    gen_job group[GFS_MAX_SHARED];
    int g = 0;
    for (int t = i; t < k; t++)
      if (!done[t] && js[t].m == js[i].m) {
        group[g++] = js[t];
        done[t] = 1;
      }
    run_group(s, group, g, worker);
  }
  for (int i = 0; i < k; i++) job_free(&js[i]);
}

void gfs_handle_job(gfs_server *s, gfs_req *r, int worker) {
  gfs_handle_jobs(s, &r, 1, worker);
}
