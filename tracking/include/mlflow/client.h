/* mlflow/client.h - configuration, errors and the connection to an MLflow
 * tracking server (REST API 2.0). Part of the ganflow tracking library, which
 * knows nothing of GANs and can be used by any C program.
 *
 * Threading: an mlflow_client holds one keep-alive HTTP connection and is
 * used by one thread at a time. Give each thread its own client (they are
 * cheap); mlflow_client_new copies the configuration.
 *
 * Errors: every fallible call returns an mlflow_status (MLFLOW_OK == 0) and
 * fills the mlflow_error the caller owns (NULL allowed). The library never
 * prints, never exits, and never puts a password or token in a message. */
#ifndef MLFLOW_CLIENT_H
#define MLFLOW_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mlflow_status {
  MLFLOW_OK = 0,
  MLFLOW_E_INVALID = -1,     /* bad argument, rejected before any request */
  MLFLOW_E_NOMEM = -2,       /* allocation failed */
  MLFLOW_E_CONNECT = -3,     /* no answer from the server (after retries) */
  MLFLOW_E_HTTP = -4,        /* the server answered with an error status */
  MLFLOW_E_PROTOCOL = -5,    /* an answer we cannot use (not JSON, field missing) */
  MLFLOW_E_IO = -6,          /* a local file or directory operation failed */
  MLFLOW_E_UNSAFE_PATH = -7, /* a path from the server would escape its target */
  MLFLOW_E_TIMEOUT = -8,     /* a wait gave up (e.g. model version never READY) */
  MLFLOW_E_NOT_FOUND = -9,   /* the thing asked for does not exist */
  MLFLOW_E_UNSUPPORTED = -10,/* a URI scheme or feature this client lacks */
  MLFLOW_E_FULL = -11,       /* the async logger's queue stayed full */
  MLFLOW_E_STATE = -12,      /* call not valid now (e.g. logger closed) */
  MLFLOW_E_AUTH = -13,       /* 401 or 403 */
} mlflow_status;

typedef struct mlflow_error {
  mlflow_status status;  /* what the call returned */
  long http_status;      /* HTTP status of the last answer; 0 if none came */
  char error_code[64];   /* the server's error_code, e.g. "RESOURCE_DOES_NOT_EXIST"; "" if none */
  char message[1024];    /* "POST runs/create: HTTP 400 INVALID_PARAMETER_VALUE: ..." */
} mlflow_error;

/* Static name of a status, e.g. "MLFLOW_E_HTTP"; never NULL. */
const char *mlflow_status_name(mlflow_status s);

/* The longest tracking URI accepted, in bytes (NUL not counted). A longer
 * one is refused (MLFLOW_E_INVALID, "tracking URI too long") by
 * mlflow_config_set_uri, mlflow_config_from_env and mlflow_client_new,
 * never cut short: with it, an error message that names the server keeps
 * the whole URI and the reason (mlflow_error.message). */
#define MLFLOW_MAX_URI_LEN 512

/* Connection settings. Strings are owned by the struct (heap copies) and
 * released by mlflow_config_free. */
typedef struct mlflow_config {
  char *tracking_uri;       /* "http(s)://host[:port][/prefix]", no trailing '/' */
  char *username;           /* Basic auth when username and password are both set */
  char *password;
  char *token;              /* else Bearer token, when set */
  int insecure_tls;         /* 1: do not verify the server's certificate */
  char *server_cert_path;   /* CA bundle to verify the server with, or NULL */
  char *client_cert_path;   /* client certificate (PEM, key included), or NULL */
  int max_retries;          /* retries after the first try (7) */
  double backoff_factor;    /* seconds; the n-th retry waits factor*2^(n-1) (2) */
  double backoff_jitter;    /* plus uniform [0, jitter) seconds (1.0) */
  double backoff_max_s;     /* cap on one wait, Retry-After included (120) */
  double timeout_s;         /* whole-request timeout (120) */
  /* Called before each wait between two tries of a request (NULL: none;
   * the official client's defaults wait about 4 minutes in all before
   * giving up on an unreachable server), so that a program can say it is
   * waiting: why the last try failed (NULL when the request was made
   * without an error struct), the retry about to be made (1 to
   * max_retries), max_retries and the seconds it waits first. Runs on the
   * requesting thread; must not use the client. */
  void (*on_retry)(void *ctx, const mlflow_error *why, int retry,
                   int max_retries, double wait_s);
  void *on_retry_ctx;       /* on_retry's first argument, not owned */
} mlflow_config;

/* Defaults of the official client; tracking_uri "http://127.0.0.1:5000".
 * Allocates the URI copy: free with mlflow_config_free. */
mlflow_status mlflow_config_init(mlflow_config *cfg, mlflow_error *err);

/* The ranges mlflow_config_from_env takes for the numeric variables:
 * MLFLOW_HTTP_REQUEST_MAX_RETRIES an integer in [0, 100], _BACKOFF_FACTOR
 * and _BACKOFF_JITTER seconds in [0, 3600], _TIMEOUT seconds in [0.001,
 * 86400]. */
#define MLFLOW_ENV_MAX_RETRIES_MAX 100
#define MLFLOW_ENV_BACKOFF_MAX_S 3600.0
#define MLFLOW_ENV_TIMEOUT_MIN_S 0.001
#define MLFLOW_ENV_TIMEOUT_MAX_S 86400.0

/* mlflow_config_init, then the MLflow environment variables:
 * MLFLOW_TRACKING_URI, MLFLOW_TRACKING_USERNAME, _PASSWORD, _TOKEN,
 * MLFLOW_TRACKING_INSECURE_TLS, MLFLOW_TRACKING_SERVER_CERT_PATH,
 * MLFLOW_TRACKING_CLIENT_CERT_PATH, MLFLOW_HTTP_REQUEST_MAX_RETRIES,
 * MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR, MLFLOW_HTTP_REQUEST_BACKOFF_JITTER,
 * MLFLOW_HTTP_REQUEST_TIMEOUT. A malformed value is an error naming the
 * variable. On error cfg is left freed (no leak, safe to free again). */
mlflow_status mlflow_config_from_env(mlflow_config *cfg, mlflow_error *err);

/* Validates and stores a copy of uri (trailing '/' removed). Only http and
 * https are served by this REST client; "file:", "databricks" and bare paths
 * are MLFLOW_E_UNSUPPORTED; a URI longer than MLFLOW_MAX_URI_LEN is
 * MLFLOW_E_INVALID. */
mlflow_status mlflow_config_set_uri(mlflow_config *cfg, const char *uri,
                                    mlflow_error *err);

/* Deep copy of src into dst (dst is overwritten, not freed first). */
mlflow_status mlflow_config_copy(mlflow_config *dst, const mlflow_config *src,
                                 mlflow_error *err);

/* Frees the strings and zeroes cfg; accepts NULL and a zeroed struct. */
void mlflow_config_free(mlflow_config *cfg);

typedef struct mlflow_client mlflow_client;

/* Creates a client holding a copy of cfg. *out is owned by the caller:
 * mlflow_client_free. No request is made. MLFLOW_E_INVALID when cfg has no
 * tracking URI or one longer than MLFLOW_MAX_URI_LEN (a config filled by
 * hand rather than by mlflow_config_set_uri). */
mlflow_status mlflow_client_new(mlflow_client **out, const mlflow_config *cfg,
                                mlflow_error *err);

/* Closes the connection and frees; accepts NULL. */
void mlflow_client_free(mlflow_client *c);

/* The client's configuration (owned by the client). */
const mlflow_config *mlflow_client_config(const mlflow_client *c);

/* GET {uri}/health; MLFLOW_OK when the server answers 200. Does not retry. */
mlflow_status mlflow_ping(mlflow_client *c, mlflow_error *err);

/* GET {uri}/version. *version_out is malloc'd; the caller frees it. */
mlflow_status mlflow_server_version(mlflow_client *c, char **version_out,
                                    mlflow_error *err);

/* Number of HTTP attempts this client has made (retries included). */
uint64_t mlflow_client_attempts(const mlflow_client *c);

/* Milliseconds since the Unix epoch (what MLflow timestamps use). */
int64_t mlflow_now_ms(void);

#ifdef __cplusplus
}
#endif
#endif
