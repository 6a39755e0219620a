/* handlers.c - what each endpoint answers: probes, metadata and metrics on
 * the polling thread; generation (GET generate, V2 infer, MLflow
 * invocations) on a worker. Errors are {"error": "..."} with the status of
 * DESIGN §2. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"

static void set_model_headers(gfs_req *r, const gfs_slot *sl,
                              const gfs_model *m) {
  snprintf(r->model, sizeof r->model, "%s", m->name);
  snprintf(r->version, sizeof r->version, "%s", m->version);
  snprintf(r->alias, sizeof r->alias, "%s", sl->alias ? sl->alias : "");
}

static void answer_text(gfs_req *r, int status, const char *ctype,
                        const char *text) {
  char *body = strdup(text);
  if (!body) {
    gfs_error(r, 500, "out of memory");
    return;
  }
  gfs_answer(r, status, ctype, body, strlen(body));
}

static void answer_sbuf(gfs_req *r, int status, const char *ctype,
                        gfs_sbuf *b) {
  size_t len = 0;
  char *body = gfs_sbuf_take(b, &len);
  if (!body) gfs_error(r, 500, "out of memory");
  else gfs_answer(r, status, ctype, body, len);
}

static void model_meta(gfs_req *r, gfs_slot *sl) {
  gfs_model *m = gfs_slot_acquire(sl);
  if (!m) {
    r->retry_after = 1;
    gfs_error(r, 503, "model '%s' is not loaded yet", sl->name);
    return;
  }
  const gf_model_config *c = &m->cfg;
  gfs_sbuf b;
  gfs_sbuf_init(&b);
  gfs_sbuf_puts(&b, "{\"name\": ");
  gfs_sbuf_json_str(&b, m->name);
  gfs_sbuf_puts(&b, ", \"versions\": [");
  gfs_sbuf_json_str(&b, m->version);
  gfs_sbuf_puts(&b, "], \"platform\": \"ganflow\", \"uri\": ");
  gfs_sbuf_json_str(&b, sl->uri);
  gfs_sbuf_puts(&b, ", \"alias\": ");
  if (sl->alias) gfs_sbuf_json_str(&b, sl->alias);
  else gfs_sbuf_puts(&b, "null");
  gfs_sbuf_printf(&b,
                  ", \"architecture\": \"%s\", \"inputs\": [{\"name\": "
                  "\"seed\", \"datatype\": \"INT64\", \"shape\": [-1]}, "
                  "{\"name\": \"z\", \"datatype\": \"FP32\", \"shape\": [-1, "
                  "%d]}], \"outputs\": [{\"name\": \"image\", \"datatype\": "
                  "\"FP32\", \"shape\": [-1, %d, %d, %d]}], \"max_images\": "
                  "%d}\n", gf_arch_name(c->architecture), c->z_dim,
                  c->image_channels, c->image_height, c->image_width,
                  m->max_batch);
  set_model_headers(r, sl, m);
  gfs_model_unref(m);
  answer_sbuf(r, 200, "application/json", &b);
}

void gfs_handle_inline(gfs_server *s, gfs_req *r) {
  int ready = gfs_server_ready(s);
  switch (r->route) {
    case GFS_R_PING:
    case GFS_R_HEALTH:
      if (ready) answer_text(r, 200, "text/plain", "\n");
      else gfs_error(r, 503, "models are not loaded yet");
      break;
    case GFS_R_VERSION:
      answer_text(r, 200, "text/plain", GFS_VERSION "\n");
      break;
    case GFS_R_LIVE:
      answer_text(r, 200, "application/json", "{\"live\": true}\n");
      break;
    case GFS_R_READY:
      answer_text(r, ready ? 200 : 503, "application/json",
                  ready ? "{\"ready\": true}\n" : "{\"ready\": false}\n");
      break;
    case GFS_R_MODEL_READY: {
      gfs_model *m = gfs_slot_acquire(r->slot);
      answer_text(r, m ? 200 : 503, "application/json",
                  m ? "{\"ready\": true}\n" : "{\"ready\": false}\n");
      gfs_model_unref(m);
      break;
    }
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
    default:
      gfs_error(r, 500, "route not handled");
  }
}

/* [n, C, H, W] values: pixels (uint8 as integers) or floats. */
static void json_images(gfs_sbuf *b, const float *img, size_t count,
                        int pixels) {
  for (size_t i = 0; i < count; i++) {
    if (i) gfs_sbuf_append(b, ",", 1);
    float x = img[i];
    if (pixels) {
      float v = isnan(x) ? -1.0f : (x < -1.0f ? -1.0f : (x > 1.0f ? 1.0f : x));
      gfs_sbuf_printf(b, "%d", (int)lrintf((v + 1.0f) * 0.5f * 255.0f));
    } else {
      gfs_sbuf_printf(b, "%.6g", isfinite(x) ? (double)x : 0.0);
    }
  }
}

/* Runs the generator for req's latents; the answer is written in r. */
static void run_job(gfs_server *s, gfs_req *r, gfs_model *m, int worker,
                    const float *z, int n, const gfs_infer_req *ir) {
  size_t count = (size_t)n * m->image_numel;
  float *img = malloc(count * sizeof *img);
  if (!img) {
    gfs_error(r, 500, "out of memory");
    return;
  }
  gf_err e;
  if (gfs_model_generate(m, worker, z, n, img, &e) != GF_OK) {
    gfs_log(s, "model %s version %s: %s", m->name, m->version, e.msg);
    gfs_error(r, 500, "generation failed: %s", e.msg);
    free(img);
    return;
  }
  atomic_fetch_add(&s->metrics.images, (unsigned long)n);
  const gf_model_config *c = &m->cfg;
  gfs_sbuf b;
  gfs_sbuf_init(&b);
  if (r->route == GFS_R_GENERATE && r->args.format == GFS_FORMAT_PNG) {
    uint8_t *png = NULL;
    size_t len = 0;
    if (gfs_images_png(m, img, n, &png, &len, &e) != GF_OK)
      gfs_error(r, 500, "PNG encoding failed: %s", e.msg);
    else
      gfs_answer(r, 200, "image/png", (char *)png, len);
  } else if (r->route == GFS_R_GENERATE) {
    gfs_sbuf_puts(&b, "{\"model\": ");
    gfs_sbuf_json_str(&b, m->name);
    gfs_sbuf_puts(&b, ", \"version\": ");
    gfs_sbuf_json_str(&b, m->version);
    gfs_sbuf_printf(&b, ", \"seed\": %llu, \"shape\": [%d, %d, %d, %d], "
                        "\"datatype\": \"UINT8\", \"data\": [",
                    (unsigned long long)r->args.seed, n, c->image_channels,
                    c->image_height, c->image_width);
    json_images(&b, img, count, 1);
    gfs_sbuf_puts(&b, "]}\n");
    answer_sbuf(r, 200, "application/json", &b);
  } else if (r->route == GFS_R_INFER) {
    gfs_sbuf_puts(&b, "{\"model_name\": ");
    gfs_sbuf_json_str(&b, m->name);
    gfs_sbuf_puts(&b, ", \"model_version\": ");
    gfs_sbuf_json_str(&b, m->version);
    if (ir->id[0]) {
      gfs_sbuf_puts(&b, ", \"id\": ");
      gfs_sbuf_json_str(&b, ir->id);
    }
    gfs_sbuf_printf(&b, ", \"outputs\": [{\"name\": \"image\", \"datatype\": "
                        "\"FP32\", \"shape\": [%d, %d, %d, %d], \"data\": [",
                    n, c->image_channels, c->image_height, c->image_width);
    json_images(&b, img, count, 0);
    gfs_sbuf_puts(&b, "]}]}\n");
    answer_sbuf(r, 200, "application/json", &b);
  } else {
    gfs_sbuf_puts(&b, "{\"predictions\": [");
    for (int k = 0; k < n; k++) {
      gfs_sbuf_puts(&b, k ? ", [" : "[");
      json_images(&b, img + (size_t)k * m->image_numel, m->image_numel, 0);
      gfs_sbuf_puts(&b, "]");
    }
    gfs_sbuf_puts(&b, "]}\n");
    answer_sbuf(r, 200, "application/json", &b);
  }
  gfs_sbuf_free(&b);
  free(img);
}

void gfs_handle_job(gfs_server *s, gfs_req *r, int worker) {
  gfs_model *m = gfs_slot_acquire(r->slot);
  if (!m) {
    r->retry_after = 1;
    gfs_error(r, 503, "model '%s' is not loaded yet", r->slot->name);
    return;
  }
  set_model_headers(r, r->slot, m);
  gf_err e;
  gfs_infer_req ir;
  gfs_infer_req_init(&ir);
  float *z = NULL;
  int n = 0;
  if (r->route == GFS_R_GENERATE) {
    if (r->args.has_class && m->cfg.num_classes == 0) {
      gfs_error(r, 400, "class: model '%s' is unconditional", m->name);
      goto done;
    }
    if (r->args.has_class && r->args.cls >= m->cfg.num_classes) {
      gfs_error(r, 400, "class must be 0..%d", m->cfg.num_classes - 1);
      goto done;
    }
    if (r->args.has_class) {
      gfs_error(r, 400, "class: conditional generation is not supported");
      goto done;
    }
    n = r->args.n;
  } else {
    gf_status st = r->route == GFS_R_INFER
                       ? gfs_v2_parse(r->body, r->body_len, m->cfg.z_dim,
                                      s->cfg.max_images, &ir, &e)
                       : gfs_invocations_parse(r->body, r->body_len,
                                               m->cfg.z_dim,
                                               s->cfg.max_images, &ir, &e);
    if (st != GF_OK) {
      gfs_error(r, 400, "%s", e.msg);
      goto done;
    }
    n = ir.n;
  }
  if (ir.z) {
    run_job(s, r, m, worker, ir.z, n, &ir);
    goto done;
  }
  z = malloc((size_t)n * (size_t)m->cfg.z_dim * sizeof *z);
  if (!z) {
    gfs_error(r, 500, "out of memory");
    goto done;
  }
  gf_status st = ir.seeds ? gfs_model_latents(m, ir.seeds, n, 1, z, &e)
                          : gfs_model_latents(m, &r->args.seed, n, 0, z, &e);
  if (st != GF_OK) gfs_error(r, 400, "%s", e.msg);
  else run_job(s, r, m, worker, z, n, &ir);
done:
  free(z);
  gfs_infer_req_free(&ir);
  gfs_model_unref(m);
}
