/* hostile_server.h - a scripted HTTP/1.1 server for tests of the tracking
 * library's error paths: answers the real MLflow server never gives (HTML
 * with 200, a body cut mid-way, a stall, an unsafe artifact listing).
 *
 * It runs on a thread of the test process, bound to 127.0.0.1 on a port the
 * kernel picks. Each request it receives is recorded (request line, headers,
 * body) and answered with the next scripted response, raw bytes written to
 * the socket as given; when the script runs out, the last response repeats
 * if hs_repeat_last was set, else a 404 JSON error goes back. Every socket
 * has timeouts, every loop is bounded, and the thread stops by itself after
 * HS_MAX_LIFETIME_S even if nobody calls hs_stop.
 *
 * Not a general HTTP server: bodies need Content-Length (what libcurl sends),
 * and no chunked encoding, TLS or pipelining beyond what comes in order.
 * One server per test case; not thread-safe beyond the one server thread
 * and the one test thread. */
#ifndef GF_TEST_HOSTILE_SERVER_H
#define GF_TEST_HOSTILE_SERVER_H

#include <stddef.h>

#define HS_MAX_LIFETIME_S 60

typedef struct hs_server hs_server;

/* How one scripted response is delivered. */
typedef struct hs_opts {
  size_t cut_after; /* >0: send only this many bytes, then close */
  int stall;        /* 1: never answer; the connection stays open (reading
                       and discarding) until the client closes it */
  int close_after;  /* 1: close the connection after sending */
  int delay_ms;     /* wait this long before sending (bounded: <= 10000) */
} hs_opts;

/* One recorded request. Strings are NUL-terminated and owned by the
 * server; a record never changes once recorded and lives until hs_stop. */
typedef struct hs_request {
  char method[16];
  char *target;     /* "/api/2.0/mlflow/runs/get?run_id=..." */
  char *headers;    /* the raw header lines, "Name: value\r\n" each */
  char *body;       /* the body (NUL added after body_len bytes) */
  size_t body_len;
} hs_request;

/* Starts a server on 127.0.0.1:0. NULL when a socket call or the thread
 * failed. Free with hs_stop. */
hs_server *hs_start(void);

/* Stops the thread, closes every socket, frees the script and the records.
 * Accepts NULL. */
void hs_stop(hs_server *s);

/* The port the server listens on. */
int hs_port(const hs_server *s);

/* "http://127.0.0.1:PORT" into buf. */
void hs_url(const hs_server *s, char *buf, size_t cap);

/* Appends a response of raw bytes (copied) to the script. 0 on success. */
int hs_push_raw(hs_server *s, const void *data, size_t len, hs_opts opts);

/* Appends "HTTP/1.1 status reason" with Content-Type ctype (NULL: none),
 * Content-Length, the extra header lines in extra (each ending "\r\n", may
 * be NULL) and body (NULL: empty). 0 on success. */
int hs_push(hs_server *s, int status, const char *ctype, const char *extra,
            const char *body, hs_opts opts);

/* Shorthands: a JSON answer, and an answer with no body that is never sent
 * (a stall). */
int hs_push_json(hs_server *s, int status, const char *json);
int hs_push_stall(hs_server *s);

/* 1: when the script is exhausted, keep giving its last response. */
void hs_repeat_last(hs_server *s, int on);

/* Requests received so far (a stalled or cut one counts). */
size_t hs_request_count(hs_server *s);

/* Connections accepted so far (a keep-alive client makes one). */
size_t hs_connection_count(hs_server *s);

/* The i-th recorded request, or NULL when i >= hs_request_count. */
const hs_request *hs_request_get(hs_server *s, size_t i);

/* The value of header name (case-insensitive) in a request, copied into
 * buf; 1 when found, 0 otherwise. */
int hs_header(const hs_request *r, const char *name, char *buf, size_t cap);

#endif
