/* page.c - GET /: a small HTML page listing each model (URI, alias, the
 * version serving, the registry's versions and aliases, shapes, reload
 * counts) with a generated 4x4 grid (<img> of the generate endpoint), or
 * for a class-conditional model one row of images per class (the first
 * GFS_PAGE_CLASSES classes, as ganflow-train's sample grids). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/text.h"
#include "server_internal.h"

static void url_component(gf_strbuf *b, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
             (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' ||
             *p == '.' || *p == '~';
    if (ok) {
      gf_strbuf_append(b, (const char *)p, 1);
    } else {
      char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      gf_strbuf_append(b, e, 3);
    }
  }
}

static void row(gf_strbuf *b, const char *k, const char *v) {
  gf_strbuf_puts(b, "<tr><th>");
  gf_strbuf_html(b, k);
  gf_strbuf_puts(b, "</th><td>");
  gf_strbuf_html(b, v);
  gf_strbuf_puts(b, "</td></tr>\n");
}

#define GFS_PAGE_CLASSES 16

/* One row per class of m (up to GFS_PAGE_CLASSES): 8 <img>s of the
 * generate endpoint, seeds 0..7 (a PNG of n > 1 is a square grid, not a
 * row). */
static void class_rows(gf_strbuf *b, const gfs_slot *sl,
                       const gf_generator *m) {
  int shown = m->num_classes < GFS_PAGE_CLASSES ? m->num_classes
                                                : GFS_PAGE_CLASSES;
  gf_strbuf_puts(b, "<div class=\"classes\">\n");
  for (int k = 0; k < shown; k++) {
    if (m->class_names) {
      gf_strbuf_printf(b, "<div class=\"classrow\"><span>%d: ", k);
      gf_strbuf_html(b, m->class_names[k]);
      gf_strbuf_puts(b, "</span>");
    } else {
      gf_strbuf_printf(b, "<div class=\"classrow\"><span>class %d</span>", k);
    }
    for (int seed = 0; seed < 8; seed++) {
      gf_strbuf_printf(b, "<img class=\"cell\" alt=\"class %d seed %d\" "
                          "width=\"64\" height=\"64\" src=\"/v1/models/",
                       k, seed);
      url_component(b, sl->name);
      gf_strbuf_printf(b, "/generate?seed=%d&amp;class=%d\">", seed, k);
    }
    gf_strbuf_puts(b, "</div>\n");
  }
  if (shown < m->num_classes)
    gf_strbuf_printf(b, "<p>(the first %d of %d classes)</p>\n", shown,
                     m->num_classes);
  gf_strbuf_puts(b, "</div>\n");
}

static void model_section(gf_strbuf *b, gfs_slot *sl) {
  gf_generator *m = gfs_slot_acquire(sl);
  /* Copies taken under the slot lock: the watcher replaces them. */
  pthread_mutex_lock(&sl->lock);
  char *versions = sl->versions_text ? strdup(sl->versions_text) : NULL;
  char failed[sizeof sl->last_error];
  memcpy(failed, sl->last_error, sizeof failed);
  pthread_mutex_unlock(&sl->lock);
  gf_strbuf_puts(b, "<section class=\"model\"><h2>");
  gf_strbuf_html(b, sl->name);
  gf_strbuf_puts(b, "</h2>\n<table>\n");
  row(b, "URI", sl->uri);
  row(b, "alias", sl->alias ? sl->alias : "(none)");
  row(b, "serving version", m ? m->version : "(not loaded yet)");
  row(b, "registry versions", versions ? versions : "(unknown)");
  free(versions);
  /* An architecture's name (a short literal) and integers: 256 bytes hold
   * either text. */
  char text[256];
  if (m) {
    GF_FORMAT_FITS(text, sizeof text, "%s, z %d, %dx%dx%d",
                   gf_arch_name(m->cfg.architecture), m->cfg.z_dim,
                   m->cfg.image_channels, m->cfg.image_height,
                   m->cfg.image_width);
    row(b, "generator", text);
    if (m->num_classes > 0) {
      GF_FORMAT_FITS(text, sizeof text, "%d (class-conditional)",
                     m->num_classes);
      row(b, "classes", text);
    }
    row(b, "run", m->run_id ? m->run_id : "(none)");
  }
  GF_FORMAT_FITS(text, sizeof text, "%lu loaded, %lu failed",
                 atomic_load(&sl->reloads), atomic_load(&sl->reload_failures));
  row(b, "reloads", text);
  if (failed[0]) row(b, "last failure", failed);
  gf_strbuf_puts(b, "</table>\n");
  if (m && m->num_classes > 0) {
    class_rows(b, sl, m);
  } else if (m) {
    gf_strbuf_puts(b, "<img class=\"grid\" alt=\"generated grid\" "
                      "width=\"512\" height=\"512\" src=\"/v1/models/");
    url_component(b, sl->name);
    gf_strbuf_puts(b, "/generate?seed=0&amp;n=16\">\n");
  }
  gf_strbuf_puts(b, "</section>\n");
  gf_generator_unref(m);
}

void gfs_handle_page(gfs_server *s, gfs_req *r) {
  gf_strbuf b;
  gf_strbuf_init(&b);
  gf_strbuf_puts(&b,
                 "<!doctype html>\n<html><head><meta charset=\"utf-8\">"
                 "<title>ganflow-serve</title>\n<style>\n"
                 "body{font-family:sans-serif;background:#1d3557;"
                 "color:#f1faee;margin:24px}\n"
                 "th{text-align:left;padding-right:1em}\n"
                 "img.grid{image-rendering:pixelated;display:block;"
                 "margin:12px 0}\n"
                 "img.cell{image-rendering:pixelated;vertical-align:middle;"
                 "margin:1px}\n"
                 "div.classrow span{display:inline-block;width:10em}\n"
                 "</style></head><body>\n"
                 "<h1>ganflow-serve " GFS_VERSION "</h1>\n");
  for (int i = 0; i < s->n_slots; i++) model_section(&b, &s->slots[i]);
  gf_strbuf_puts(&b, "<p>API: <code>GET /v1/models/NAME/generate?seed=S&amp;"
                     "n=N[&amp;class=C]</code>, <code>POST /v2/models/NAME/infer</code>, "
                     "<code>/metrics</code>.</p>\n</body></html>\n");
  gfs_answer_strbuf(r, 200, "text/html; charset=utf-8", &b);
}
