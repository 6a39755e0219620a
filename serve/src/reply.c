/* reply.c - a request's answer: setting it (a body of any type, text, a
 * strbuf's bytes, the error JSON {"error": "..."}) and handing it to
 * libmicrohttpd as a response with its headers (Content-Type, Allow,
 * Retry-After, WWW-Authenticate, X-Model-*, Inference-Header-Content-
 * Length). The log line helpers are here too. Not here: deciding what to
 * answer (handlers.c, answer.c, page.c, http.c), the queue (queue.c). */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/text.h"
#include "server_internal.h"

char *gfs_vformat(const char *fmt, va_list ap) {
  gf_strbuf b;
  gf_strbuf_init(&b);
  gf_strbuf_vprintf(&b, fmt, ap);
  return gf_strbuf_take(&b, NULL);
}

void gfs_log_text(gfs_server *s, const char *text) {
  if (!s->cfg.log) return;
  s->cfg.log(s->cfg.log_arg,
             text ? text : "(a log line could not be formatted)");
}

void gfs_log(gfs_server *s, const char *fmt, ...) {
  if (!s->cfg.log) return;
  va_list ap;
  va_start(ap, fmt);
  char *line = gfs_vformat(fmt, ap);
  va_end(ap);
  gfs_log_text(s, line);
  free(line);
}

void gfs_answer(gfs_req *r, int status, const char *ctype, char *body,
                size_t len) {
  free(r->resp);
  r->resp_header_len = 0;
  r->status = status;
  r->ctype = ctype;
  r->resp = body;
  r->resp_len = body ? len : 0;
}

void gfs_error(gfs_req *r, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = gfs_vformat(fmt, ap); /* any length: the whole message */
  va_end(ap);
  gf_strbuf b;
  gf_strbuf_init(&b);
  gf_strbuf_puts(&b, "{\"error\": ");
  gf_strbuf_json_cstr(&b, msg ? msg : "out of memory");
  free(msg);
  gf_strbuf_puts(&b, "}\n");
  size_t len = 0;
  char *body = gf_strbuf_take(&b, &len);
  gfs_answer(r, status, "application/json", body, body ? len : 0);
}

void gfs_answer_text(gfs_req *r, int status, const char *ctype,
                     const char *text) {
  char *body = strdup(text);
  if (!body) {
    gfs_error(r, 500, "out of memory");
    return;
  }
  gfs_answer(r, status, ctype, body, strlen(body));
}

void gfs_answer_strbuf(gfs_req *r, int status, const char *ctype,
                       gf_strbuf *b) {
  size_t len = 0;
  char *body = gf_strbuf_take(b, &len);
  if (!body) gfs_error(r, 500, "out of memory");
  else gfs_answer(r, status, ctype, body, len);
}

enum MHD_Result gfs_reply_queue(struct MHD_Connection *conn, gfs_req *r) {
  if (!r->status) gfs_error(r, 500, "no answer was produced");
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      r->resp_len, r->resp ? r->resp : (void *)"",
      r->resp ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  if (!resp) return MHD_NO;
  r->resp = NULL; /* MHD frees it now */
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                          r->ctype ? r->ctype : "application/json");
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  if (r->allow) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
  if (r->resp_header_len) {
    char hl[24]; /* a size_t in decimal: 20 digits at most */
    GF_FORMAT_FITS(hl, sizeof hl, "%zu", r->resp_header_len);
    MHD_add_response_header(resp, "Inference-Header-Content-Length", hl);
  }
  if (r->auth_header)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                            "Bearer realm=\"ganflow-serve\"");
  if (r->retry_after > 0) {
    char ra[16]; /* an int in decimal: 11 characters at most */
    GF_FORMAT_FITS(ra, sizeof ra, "%d", r->retry_after);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
  }
  if (r->model[0]) {
    MHD_add_response_header(resp, "X-Model-Name", r->model);
    MHD_add_response_header(resp, "X-Model-Version", r->version);
    if (r->alias[0]) MHD_add_response_header(resp, "X-Model-Alias", r->alias);
  }
  enum MHD_Result ok = MHD_queue_response(conn, (unsigned)r->status, resp);
  MHD_destroy_response(resp);
  r->answered = 1;
  return ok;
}
