/* answer.c - the answer to a generation job once its images are made:
 * a PNG or the JSON pixels of GET /v1/.../generate, KServe V2's "image"
 * output (JSON "data", or binary tensor data after a JSON header; FP32 or
 * UINT8), and MLflow's {"predictions": [n][C][H][W]}. UINT8 and the JSON
 * pixels use gfs_pixel_u8, the PNG's mapping. Not here: parsing, passes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gfs/json_num.h"
#include "server_internal.h"

/* count values as JSON: pixels (integers) or floats that read back as the
 * same float32 (gfs_json_write_float: %.9g's digits without printf), written
 * through a local buffer in chunks. */
static void json_values(gf_strbuf *b, const float *img, size_t count,
                        int pixels) {
  char buf[4096];
  size_t at = 0;
  for (size_t i = 0; i < count; i++) {
    if (at > sizeof buf - GFS_JSON_FLOAT_MAX - 1) {
      gf_strbuf_append(b, buf, at);
      at = 0;
    }
    if (i) buf[at++] = ',';
    if (pixels)
      at += gfs_json_write_uint(gfs_pixel_u8(img[i]), buf + at);
    else
      at += gfs_json_write_float(img[i], buf + at);
  }
  gf_strbuf_append(b, buf, at);
}

/* Appends the raw tensor: count values as little-endian float32, or as
 * pixels. 0, or -1 when out of memory. */
static int binary_values(gf_strbuf *b, const float *img, size_t count,
                         int pixels) {
  size_t elem = pixels ? 1 : 4;
  unsigned char *buf = malloc(count > 0 ? count * elem : 1);
  if (!buf) return -1;
  for (size_t i = 0; i < count; i++) {
    if (pixels) {
      buf[i] = gfs_pixel_u8(img[i]);
    } else {
      uint32_t u;
      memcpy(&u, &img[i], 4);
      for (int k = 0; k < 4; k++) buf[i * 4 + (size_t)k] =
          (unsigned char)(u >> (8 * k));
    }
  }
  gf_strbuf_append(b, buf, count * elem);
  free(buf);
  return 0;
}

static void answer_v2(gfs_req *r, const gf_generator *m,
                      const gfs_infer_req *ir, const float *img, int n) {
  const gf_model_config *c = &m->cfg;
  size_t count = (size_t)n * m->image_numel;
  int u8 = ir->dtype == GFS_IMAGE_UINT8;
  gf_strbuf b;
  gf_strbuf_init(&b);
  gf_strbuf_puts(&b, "{\"model_name\": ");
  gf_strbuf_json_cstr(&b, m->name);
  gf_strbuf_puts(&b, ", \"model_version\": ");
  gf_strbuf_json_cstr(&b, m->version);
  if (ir->id[0]) {
    gf_strbuf_puts(&b, ", \"id\": ");
    gf_strbuf_json_cstr(&b, ir->id);
  }
  gf_strbuf_printf(&b, ", \"outputs\": [{\"name\": \"image\", \"datatype\": "
                       "\"%s\", \"shape\": [%d, %d, %d, %d], ",
                   u8 ? "UINT8" : "FP32", n, c->image_channels,
                   c->image_height, c->image_width);
  if (!ir->binary_out) {
    gf_strbuf_puts(&b, "\"data\": [");
    json_values(&b, img, count, u8);
    gf_strbuf_puts(&b, "]}]}\n");
    gfs_answer_strbuf(r, 200, "application/json", &b);
    return;
  }
  gf_strbuf_printf(&b, "\"parameters\": {\"binary_data_size\": %zu}}]}",
                   count * (u8 ? 1 : 4));
  size_t json_len = b.len;
  if (binary_values(&b, img, count, u8) != 0) {
    gf_strbuf_free(&b);
    gfs_error(r, 500, "out of memory");
    return;
  }
  gfs_answer_strbuf(r, 200, "application/octet-stream", &b);
  if (r->status == 200) r->resp_header_len = json_len;
}

/* {"predictions": [[[[..]]], ..]}: image k nested [C][H][W]. */
static void answer_predictions(gfs_req *r, const gf_generator *m,
                               const float *img, int n) {
  const gf_model_config *c = &m->cfg;
  size_t w = (size_t)c->image_width;
  gf_strbuf b;
  gf_strbuf_init(&b);
  gf_strbuf_puts(&b, "{\"predictions\": [");
  for (int k = 0; k < n; k++) {
    gf_strbuf_puts(&b, k ? ", [" : "[");
    for (int ch = 0; ch < c->image_channels; ch++) {
      gf_strbuf_puts(&b, ch ? ", [" : "[");
      for (int y = 0; y < c->image_height; y++) {
        gf_strbuf_puts(&b, y ? ", [" : "[");
        json_values(&b, img, w, 0);
        img += w;
        gf_strbuf_puts(&b, "]");
      }
      gf_strbuf_puts(&b, "]");
    }
    gf_strbuf_puts(&b, "]");
  }
  gf_strbuf_puts(&b, "]}\n");
  gfs_answer_strbuf(r, 200, "application/json", &b);
}

void gfs_answer_images(gfs_server *s, gfs_req *r, const gf_generator *m,
                       const gfs_infer_req *ir, const float *img, int n) {
  atomic_fetch_add(&s->metrics.images, (unsigned long)n);
  if (r->route == GFS_R_INFER) {
    answer_v2(r, m, ir, img, n);
    return;
  }
  if (r->route == GFS_R_INVOCATIONS) {
    answer_predictions(r, m, img, n);
    return;
  }
  if (r->args.format == GFS_FORMAT_PNG) {
    uint8_t *png = NULL;
    size_t len = 0;
    gf_err e;
    if (gf_generator_png(m, img, n, &png, &len, &e) != GF_OK)
      gfs_error(r, 500, "PNG encoding failed: %s", e.msg);
    else
      gfs_answer(r, 200, "image/png", (char *)png, len);
    return;
  }
  const gf_model_config *c = &m->cfg;
  gf_strbuf b;
  gf_strbuf_init(&b);
  gf_strbuf_puts(&b, "{\"model\": ");
  gf_strbuf_json_cstr(&b, m->name);
  gf_strbuf_puts(&b, ", \"version\": ");
  gf_strbuf_json_cstr(&b, m->version);
  gf_strbuf_printf(&b, ", \"seed\": %llu, \"shape\": [%d, %d, %d, %d], "
                       "\"datatype\": \"UINT8\", \"data\": [",
                   (unsigned long long)r->args.seed, n, c->image_channels,
                   c->image_height, c->image_width);
  json_values(&b, img, (size_t)n * m->image_numel, 1);
  gf_strbuf_puts(&b, "]}\n");
  gfs_answer_strbuf(r, 200, "application/json", &b);
}
