/* http.c - the libmicrohttpd side of ganflow-serve: per-request state,
 * routing (404 / 405), bearer auth (401), body limits and types (413,
 * 415; Inference-Header-Content-Length checked at once, 400), the hand
 * over of generation jobs to the queue (connection suspended, resumed
 * when the answer is ready). The answer's response is reply.c's, the
 * queue queue.c's, what each endpoint answers handlers.c's. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gf/clock.h"
#include "gf/parse.h"
#include "gf/text.h"
#include "server_internal.h"

static const char *const ALLOW_GET = "GET, HEAD";
static const char *const ALLOW_POST = "POST";

static gfs_slot *find_slot(gfs_server *s, const char *name, size_t n) {
  for (int i = 0; i < s->n_slots; i++)
    if (strlen(s->slots[i].name) == n && memcmp(s->slots[i].name, name, n) == 0)
      return &s->slots[i];
  return NULL;
}

/* The slot of name[0, n): the whole of it, or NAME/versions/V with V
 * copied to r->want_version (V non-empty, no '/', under 32 bytes). */
static gfs_slot *find_model(gfs_server *s, gfs_req *r, const char *name,
                            size_t n) {
  gfs_slot *sl = find_slot(s, name, n);
  if (sl) return sl;
  static const char tag[] = "/versions/";
  size_t t = sizeof tag - 1;
  for (size_t i = n; i-- > 0;) {
    if (i + t > n || memcmp(name + i, tag, t) != 0) continue;
    size_t vlen = n - i - t;
    if (vlen == 0 || vlen >= sizeof r->want_version ||
        memchr(name + i + t, '/', vlen))
      return NULL;
    sl = find_slot(s, name, i);
    if (sl) {
      memcpy(r->want_version, name + i + t, vlen);
      r->want_version[vlen] = '\0';
    }
    return sl;
  }
  return NULL;
}

static int ends_with(const char *s, size_t n, const char *suffix) {
  size_t k = strlen(suffix);
  return n > k && memcmp(s + n - k, suffix, k) == 0;
}

/* Sets route and endpoint; an unknown path (404) or a wrong method (405)
 * is answered in r. The model name (*name, *name_len; NULL when the route
 * has none) is looked up by the caller after auth. */
static void route(gfs_server *s, gfs_req *r, const char *url,
                  const char *method, const char **name, size_t *name_len) {
  int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
  int post = strcmp(method, "POST") == 0;
  *name = NULL;
  *name_len = 0;
  static const struct {
    const char *path;
    gfs_route route;
    gfs_endpoint ep;
  } fixed[] = {
      {"/", GFS_R_PAGE, GFS_EP_PAGE},
      {"/index.html", GFS_R_PAGE, GFS_EP_PAGE},
      {"/favicon.ico", GFS_R_FAVICON, GFS_EP_PAGE},
      {"/ping", GFS_R_PING, GFS_EP_HEALTH},
      {"/health", GFS_R_HEALTH, GFS_EP_HEALTH},
      {"/version", GFS_R_VERSION, GFS_EP_HEALTH},
      {"/v2/health/live", GFS_R_LIVE, GFS_EP_HEALTH},
      {"/v2/health/ready", GFS_R_READY, GFS_EP_HEALTH},
      {"/v2", GFS_R_SERVER_META, GFS_EP_METADATA},
      {"/metrics", GFS_R_METRICS, GFS_EP_METRICS},
      {"/invocations", GFS_R_INVOCATIONS, GFS_EP_INVOCATIONS},
  };
  r->ep = GFS_EP_OTHER;
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    if (strcmp(url, fixed[i].path) == 0) {
      r->route = fixed[i].route;
      r->ep = fixed[i].ep;
    }
  size_t n = strlen(url);
  if (r->route == GFS_R_NONE && strncmp(url, "/v1/models/", 11) == 0 &&
      ends_with(url, n, "/generate")) {
    r->route = GFS_R_GENERATE;
    r->ep = GFS_EP_GENERATE;
    *name = url + 11;
    *name_len = n - 11 - strlen("/generate");
  } else if (r->route == GFS_R_NONE && strncmp(url, "/v2/models/", 11) == 0 &&
             n > 11) {
    /* NAME[/versions/V][/infer|/ready]: the version is split off by
     * find_model. */
    *name = url + 11;
    *name_len = n - 11;
    if (ends_with(url, n, "/infer")) {
      r->route = GFS_R_INFER;
      r->ep = GFS_EP_INFER;
      *name_len -= strlen("/infer");
    } else if (ends_with(url, n, "/ready")) {
      r->route = GFS_R_MODEL_READY;
      r->ep = GFS_EP_METADATA;
      *name_len -= strlen("/ready");
    } else {
      r->route = GFS_R_MODEL_META;
      r->ep = GFS_EP_METADATA;
    }
  }
  if (r->route == GFS_R_NONE) {
    gfs_error(r, 404, "no such endpoint");
    return;
  }
  int wants_post = r->route == GFS_R_INFER || r->route == GFS_R_INVOCATIONS;
  if (wants_post ? !post : !get) {
    r->allow = wants_post ? ALLOW_POST : ALLOW_GET;
    gfs_error(r, 405, "method %s not allowed here (allowed: %s)", method,
              r->allow);
  }
  (void)s;
}

/* Routes answered without the token: the probes, and the icon a browser
 * asks for on its own (it sends no Authorization header with it). */
static int is_probe(gfs_route rt) {
  return rt == GFS_R_PING || rt == GFS_R_HEALTH || rt == GFS_R_LIVE ||
         rt == GFS_R_READY || rt == GFS_R_MODEL_READY || rt == GFS_R_FAVICON;
}

static int auth_ok(gfs_server *s, struct MHD_Connection *conn) {
  const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                              MHD_HTTP_HEADER_AUTHORIZATION);
  if (!h || strncasecmp(h, "Bearer ", 7) != 0) return 0;
  h += 7;
  size_t a = strlen(h), b = strlen(s->token);
  unsigned diff = (unsigned)(a ^ b);
  for (size_t i = 0; i < b; i++) diff |= (unsigned)(h[i < a ? i : 0] ^ s->token[i]);
  return diff == 0;
}

static enum MHD_Result query_arg(void *cls, enum MHD_ValueKind kind,
                                 const char *key, const char *value) {
  (void)kind;
  gfs_req *r = cls;
  if (r->status) return MHD_NO;
  gf_err e;
  if (gfs_gen_args_set(&r->args, key, value, r->max_images, &e) !=
      GF_OK) {
    gfs_error(r, 400, "%s", e.msg);
    return MHD_NO;
  }
  return MHD_YES;
}

/* The headers that say how to read a body: Content-Type (none or JSON;
 * octet-stream on V2 infer with Inference-Header-Content-Length, whose
 * value must be a byte count up to max_body), Content-Encoding (identity
 * only). Answers r (400, 415) and returns 0 when they do not do. */
static int body_headers_ok(gfs_server *s, gfs_req *r,
                           struct MHD_Connection *conn) {
  const char *ce = MHD_lookup_connection_value(
      conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING);
  if (ce && strcasecmp(ce, "identity") != 0) {
    gfs_error(r, 415, "Content-Encoding %.40s is not supported", ce);
    return 0;
  }
  int infer = r->route == GFS_R_INFER;
  const char *ih = infer ? MHD_lookup_connection_value(
                               conn, MHD_HEADER_KIND,
                               "Inference-Header-Content-Length")
                         : NULL;
  if (ih) {
    size_t v;
    if (gfs_header_length_parse(ih, s->cfg.max_body, &v) != 0) {
      gfs_error(r, 400, "Inference-Header-Content-Length must be a byte "
                "count 0..%zu (got '%.32s')", s->cfg.max_body, ih);
      return 0;
    }
    /* a size_t in decimal (20 digits at most) into ihcl[24] */
    GF_FORMAT_FITS(r->ihcl, sizeof r->ihcl, "%zu", v);
  }
  const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                               MHD_HTTP_HEADER_CONTENT_TYPE);
  gfs_ctype kind = gfs_content_type(ct);
  if (kind == GFS_CT_OTHER || (kind == GFS_CT_OCTET && !ih)) {
    if (infer)
      gfs_error(r, 415, "Content-Type must be application/json (or absent), "
                "or application/octet-stream with "
                "Inference-Header-Content-Length");
    else
      gfs_error(r, 415, "Content-Type must be application/json");
    return 0;
  }
  return 1;
}

/* First call: the headers are in. Decides everything that does not need
 * the body. */
static void on_headers(gfs_server *s, gfs_req *r, struct MHD_Connection *conn,
                       const char *url, const char *method) {
  const char *name;
  size_t name_len;
  r->max_images = s->cfg.max_images; /* generate's bound, metadata's figure */
  route(s, r, url, method, &name, &name_len);
  if (r->status) return;
  if (s->token && !is_probe(r->route) && !auth_ok(s, conn)) {
    r->auth_header = 1;
    gfs_error(r, 401, "missing or wrong bearer token");
    return;
  }
  if (name) {
    r->slot = find_model(s, r, name, name_len);
    if (!r->slot) {
      gfs_error(r, 404, "unknown model '%.*s'", (int)(name_len > 100 ? 100 : name_len), name);
      return;
    }
  } else if (r->route == GFS_R_INVOCATIONS) {
    r->slot = &s->slots[0];
  }
  if (r->route == GFS_R_INFER || r->route == GFS_R_INVOCATIONS) {
    if (!body_headers_ok(s, r, conn)) return;
    const char *cl = MHD_lookup_connection_value(
        conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t len;
    if (cl && gf_parse_u64(NULL, cl, 0, UINT64_MAX, &len, NULL) == GF_OK &&
        len > s->cfg.max_body) {
      gfs_error(r, 413, "body of %llu bytes exceeds the limit of %zu",
                (unsigned long long)len, s->cfg.max_body);
      return;
    }
  }
  if (r->route == GFS_R_GENERATE) {
    gfs_gen_args_default(&r->args);
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, query_arg, r);
  }
}

/* Appends to r's body. -1: past max_body (413); -2: the bodies of all
 * connections together would pass the server's budget (503). The bytes a
 * body holds are counted in s->body_bytes until gfs_on_completed. */
static int append_body(gfs_server *s, gfs_req *r, const char *data,
                       size_t n) {
  if (r->body_len + n > s->cfg.max_body) return -1;
  if (r->body_len + n + 1 > r->body_cap) {
    size_t cap = r->body_cap ? r->body_cap : 4096;
    while (cap < r->body_len + n + 1) cap *= 2;
    if (cap > s->cfg.max_body + 1) cap = s->cfg.max_body + 1;
    size_t more = cap - r->body_cap;
    if (atomic_fetch_add(&s->body_bytes, more) + more > s->body_budget) {
      atomic_fetch_sub(&s->body_bytes, more);
      return -2;
    }
    char *p = realloc(r->body, cap);
    if (!p) {
      atomic_fetch_sub(&s->body_bytes, more);
      return -2;
    }
    r->body = p;
    r->body_cap = cap;
  }
  memcpy(r->body + r->body_len, data, n);
  r->body_len += n;
  r->body[r->body_len] = '\0';
  return 0;
}

static void drop_body(gfs_server *s, gfs_req *r) {
  atomic_fetch_sub(&s->body_bytes, r->body_cap);
  free(r->body);
  r->body = NULL;
  r->body_len = r->body_cap = 0;
}

enum MHD_Result gfs_on_access(void *cls, struct MHD_Connection *conn,
                              const char *url, const char *method,
                              const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls) {
  (void)version;
  gfs_server *s = cls;
  gfs_req *r = *req_cls;
  if (!r) {
    r = calloc(1, sizeof *r);
    if (!r) return MHD_NO;
    atomic_init(&r->done, 0);
    r->conn = conn;
    r->t0 = gf_mono_s();
    *req_cls = r;
    on_headers(s, r, conn, url, method);
    if (r->status) return gfs_reply_queue(conn, r);
    return MHD_YES;
  }
  if (r->answered) {
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (r->queued) /* resumed by a worker, or a spurious call */
    return atomic_load(&r->done) ? gfs_reply_queue(conn, r) : MHD_YES;
  if (*upload_data_size) {
    int rc = append_body(s, r, upload_data, *upload_data_size);
    if (rc != 0) {
      *upload_data_size = 0;
      drop_body(s, r);
      if (rc == -1) {
        gfs_error(r, 413, "body exceeds the limit of %zu bytes",
                  s->cfg.max_body);
      } else {
        r->retry_after = 1;
        gfs_error(r, 503, "too many request bodies in memory; retry");
      }
      return gfs_reply_queue(conn, r);
    }
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (r->route == GFS_R_GENERATE || r->route == GFS_R_INFER ||
      r->route == GFS_R_INVOCATIONS) {
    if (gfs_enqueue(s, r) == 0) return MHD_YES; /* suspended */
    return gfs_reply_queue(conn, r);
  }
  gfs_handle_inline(s, r);
  return gfs_reply_queue(conn, r);
}

void gfs_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                      enum MHD_RequestTerminationCode toe) {
  (void)conn;
  gfs_server *s = cls;
  gfs_req *r = *req_cls;
  if (!r) return;
  if (r->answered)
    gfs_metrics_observe(&s->metrics, r->ep,
                        toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ||
                                r->status >= 400 ? r->status : 499,
                        gf_mono_s() - r->t0);
  drop_body(s, r);
  free(r->resp);
  free(r);
  *req_cls = NULL;
}
