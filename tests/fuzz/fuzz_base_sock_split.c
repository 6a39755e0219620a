/* fuzz_base_sock_split.c - fuzz target for the address rule of gf/sock.h
 * (base/src/sock.c): gf_sock_split on HOST:PORT, gf_sock_host on a host
 * alone, which read what users and peers write (--rdzv, MASTER_ADDR). The
 * input is one string (cut at its first NUL); its first byte also picks a
 * small room for the host, so "too long" is reached. Any input gives
 * GF_EINVAL with a NUL-terminated message and the outputs untouched, or a
 * host without brackets that gf_sock_host takes as it is, a port in
 * 0..65535, and a name that splits back into the same host and port. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gf/sock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_fail(gf_status st, const gf_err *e) {
  if (st != GF_EINVAL || e->code != GF_EINVAL || !e->msg[0] ||
      !memchr(e->msg, '\0', sizeof e->msg))
    __builtin_trap();
}

static void one(const char *s, size_t cap) {
  char host[GF_SOCK_HOST_MAX];
  memcpy(host, "untouched", 10);
  int port = -7;
  gf_err e;
  memset(&e, 0, sizeof e);
  gf_status st = gf_sock_split("fuzz", s, host, cap, &port, &e);
  if (st) {
    check_fail(st, &e);
    if (strcmp(host, "untouched") != 0 || port != -7) __builtin_trap();
  } else {
    size_t n = strlen(host);
    if (n == 0 || n >= cap || strchr(host, '[') || strchr(host, ']') ||
        port < 0 || port > 65535)
      __builtin_trap();
    char again[GF_SOCK_HOST_MAX], name[GF_SOCK_NAME_MAX];
    if (gf_sock_host("fuzz", host, again, sizeof again, &e) != GF_OK ||
        strcmp(again, host) != 0)
      __builtin_trap();
    int port2 = -1;
    gf_sock_name(host, port, name, sizeof name);
    if (gf_sock_split("fuzz", name, again, sizeof again, &port2, &e) != GF_OK ||
        strcmp(again, host) != 0 || port2 != port)
      __builtin_trap();
  }
  char alone[GF_SOCK_HOST_MAX];
  memset(&e, 0, sizeof e);
  st = gf_sock_host("fuzz", s, alone, cap, &e);
  if (st) {
    check_fail(st, &e);
    if (alone[0] != '\0') __builtin_trap();
  } else if (!alone[0] || strlen(alone) >= cap || strchr(alone, ']')) {
    __builtin_trap();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  one(s, GF_SOCK_HOST_MAX);
  one(s, size ? 1 + data[0] % 24 : 1);
  free(s);
  return 0;
}
