/* internal.h - what the tracking library's source files share; not public.
 * The parsers of server answers live in parse.h (fuzzed separately). */
#ifndef MLFLOW_INTERNAL_H
#define MLFLOW_INTERNAL_H

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>

#include "mlflow/mlflow.h"

/* A growable byte buffer, always NUL-terminated when data != NULL.
 * limit: appends past this many bytes fail (0 = no limit). */
typedef struct mlflow_buf {
  char *data;
  size_t len;
  size_t cap;
  size_t limit;
} mlflow_buf;

/* Appends n bytes; 0 on success, -1 on allocation failure or limit. */
int mlflow_buf_append(mlflow_buf *b, const void *p, size_t n);
int mlflow_buf_appendf(mlflow_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void mlflow_buf_free(mlflow_buf *b);

struct mlflow_client {
  mlflow_config cfg;   /* owned copy */
  CURL *curl;          /* one easy handle: one keep-alive connection */
  char *bearer;        /* "Authorization: Bearer ..." or NULL; never logged */
  unsigned rng;        /* jitter state, per client */
  uint64_t attempts;   /* HTTP attempts made, retries included */
};

/* Fills err (NULL allowed) and returns st. http_status and error_code are
 * cleared; callers that have them set them after. The message is written
 * with mlflow_message_vformat. */
mlflow_status mlflow_fail(mlflow_error *err, mlflow_status st, const char *fmt,
                          ...) __attribute__((format(printf, 3, 4)));

/* vsnprintf for messages, which are the last stop of a failure and cannot
 * themselves be refused: a text longer than cap - 1 bytes keeps its start
 * and ends in "..." so that the cut shows (cap >= 4). Returns 0 when the
 * whole text fit, -1 when it was cut (or could not be formatted: then dst
 * says so). */
int mlflow_message_vformat(char *dst, size_t cap, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
int mlflow_message_format(char *dst, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* snprintf into buf[cap] that never keeps a cut text: when the result does
 * not fit, buf holds "" and err (status st) says that `what` ("run id",
 * "model version") was too long, with its length, the room there was and
 * its start. Returns MLFLOW_OK or st. */
mlflow_status mlflow_format(char *buf, size_t cap, mlflow_error *err,
                            mlflow_status st, const char *what,
                            const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Copies uri into out (cap bytes) with any "user:password@" removed, for
 * messages: a URI may carry credentials and they are never printed.
 * Returns 0; -1 when the redacted URI was longer than cap - 1 bytes and
 * out holds its start ending in "..." (mlflow_message_format). A URI the
 * configuration accepted fits MLFLOW_MAX_URI_LEN + 1 bytes. */
int mlflow_uri_redact(const char *uri, char *out, size_t cap);

/* MLFLOW_E_INVALID, "tracking URI too long", when uri is longer than
 * MLFLOW_MAX_URI_LEN; its start is shown without credentials. */
mlflow_status mlflow_uri_check_length(const char *uri, mlflow_error *err);

/* strdup that accepts NULL (returns NULL). */
char *mlflow_strdup(const char *s);

/* One HTTP exchange, retried per the client's configuration. */
typedef struct mlflow_http_req {
  const char *method;       /* "GET", "POST", "PUT", "DELETE", "PATCH" */
  const char *url;          /* absolute */
  const char *what;         /* names the call in messages: "POST runs/create" */
  const char *body;         /* request body or NULL */
  size_t body_len;
  const char *content_type; /* of body; NULL: application/json when body */
  FILE *upload;             /* PUT this file instead of body (rewound per try) */
  int64_t upload_size;
  FILE *download;           /* write a 2xx body here instead of memory
                               (truncated per try) */
  int max_retries;          /* -1: the client's configuration */
} mlflow_http_req;

typedef struct mlflow_http_resp {
  long status;              /* last HTTP status; 0 when none */
  mlflow_buf body;          /* body of the last answer (limited size) */
  const char *content_type; /* of the last answer, NULL when none; libcurl's
                               string, valid until the client's next
                               request */
} mlflow_http_resp;

void mlflow_http_resp_free(mlflow_http_resp *r);

/* MLFLOW_OK for a 2xx answer. Otherwise an error: CONNECT when no answer
 * came, AUTH for 401/403, NOT_FOUND for RESOURCE_DOES_NOT_EXIST, else HTTP,
 * with the server's error_code and message in err. resp always filled. */
mlflow_status mlflow_http_do(mlflow_client *c, const mlflow_http_req *req,
                             mlflow_http_resp *resp, mlflow_error *err);

/* Calls the REST API: {uri}/api/2.0/mlflow/{endpoint}. For GET and DELETE
 * without body, query is the encoded query string (or NULL); for POST,
 * PATCH and DELETE, body is sent as JSON. *out (may be NULL) receives the
 * parsed JSON object answer, owned by the caller (cJSON_Delete). */
mlflow_status mlflow_api(mlflow_client *c, const char *method,
                         const char *endpoint, const cJSON *body,
                         const char *query, cJSON **out, mlflow_error *err);

/* Calls endpoint with the string fields that follow: (key, value) pairs
 * ended by a NULL key; a pair whose value is NULL is left out. GET sends
 * them as the query string, any other method as a JSON object body. *out
 * as for mlflow_api (may be NULL). */
mlflow_status mlflow_api_fields(mlflow_client *c, const char *method,
                                const char *endpoint, cJSON **out,
                                mlflow_error *err, ...);

/* MLFLOW_E_INVALID naming `what` when v is NULL or empty. */
mlflow_status mlflow_need(const char *v, const char *what, mlflow_error *err);

/* Appends "key=value" (URL-encoded, '&'-separated) to a query buffer. */
int mlflow_query_add(mlflow_buf *q, const char *key, const char *value);

/* Prints JSON compactly with NaN/+-Inf as MLflow wants them (strings).
 * Returns a malloc'd string (caller frees) or NULL. */
char *mlflow_json_print(const cJSON *j);

/* A JSON number for an int64 (exact) and for a metric value (NaN and
 * +-Inf as the strings MLflow expects, finite values round-trip exactly). */
cJSON *mlflow_json_int64(int64_t v);
cJSON *mlflow_json_double(double v);

/* Sleeps seconds (fractions allowed). */
void mlflow_sleep(double seconds);

/* Resolves an artifact URI to the path P under
 * {uri}/api/2.0/mlflow-artifacts/artifacts/P; *path_out malloc'd (may be
 * "" for the root). runs:/ URIs need the client. */
mlflow_status mlflow_artifact_root_path(mlflow_client *c, const char *uri,
                                        char **path_out, mlflow_error *err);

/* Makes every missing directory of path, like mkdir -p. For the caller's
 * own paths: links in it are followed. */
mlflow_status mlflow_mkdirs(const char *path, mlflow_error *err);

/* Removes a directory tree the library created (a failed download);
 * links are removed, never followed. Best effort. */
void mlflow_remove_tree(const char *path);

#endif
