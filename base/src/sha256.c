/* sha256.c - SHA-256 over buffers and files through OpenSSL's EVP API; see
 * gf/sha256.h. */
#include "gf/sha256.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "gf/text.h"

gf_status gf_sha256_init(gf_sha256 *h, gf_err *err) {
  h->impl = NULL;
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  if (!ctx) return gf_fail(err, GF_ENOMEM, "sha256: EVP_MD_CTX_new failed");
  if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
    EVP_MD_CTX_free(ctx);
    return gf_fail(err, GF_EDEVICE, "sha256: EVP_DigestInit_ex failed");
  }
  h->impl = ctx;
  return GF_OK;
}

gf_status gf_sha256_update(gf_sha256 *h, const void *data, size_t len,
                           gf_err *err) {
  if (!h->impl) return gf_fail(err, GF_ESTATE, "sha256: hasher not initialised");
  if (len == 0) return GF_OK;
  if (EVP_DigestUpdate((EVP_MD_CTX *)h->impl, data, len) != 1)
    return gf_fail(err, GF_EDEVICE, "sha256: EVP_DigestUpdate failed");
  return GF_OK;
}

gf_status gf_sha256_final(gf_sha256 *h, char hex[GF_SHA256_HEX_LEN + 1],
                          gf_err *err) {
  if (!h->impl) return gf_fail(err, GF_ESTATE, "sha256: hasher not initialised");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  int ok = EVP_DigestFinal_ex((EVP_MD_CTX *)h->impl, md, &n);
  gf_sha256_free(h);
  if (ok != 1 || n != GF_SHA256_HEX_LEN / 2)
    return gf_fail(err, GF_EDEVICE, "sha256: EVP_DigestFinal_ex failed");
  gf_hex_encode(md, n, hex);
  return GF_OK;
}

void gf_sha256_free(gf_sha256 *h) {
  if (!h) return;
  EVP_MD_CTX_free((EVP_MD_CTX *)h->impl);
  h->impl = NULL;
}

gf_status gf_sha256_buf(const void *data, size_t len,
                        char hex[GF_SHA256_HEX_LEN + 1], gf_err *err) {
  gf_sha256 h;
  gf_status st = gf_sha256_init(&h, err);
  if (st != GF_OK) return st;
  st = gf_sha256_update(&h, data, len, err);
  if (st != GF_OK) {
    gf_sha256_free(&h);
    return st;
  }
  return gf_sha256_final(&h, hex, err);
}

gf_status gf_sha256_file(const char *path, char hex[GF_SHA256_HEX_LEN + 1],
                         gf_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return gf_fail(err, GF_EIO, "sha256: cannot open %s: %s", path,
                   strerror(errno));
  gf_sha256 h;
  gf_status st = gf_sha256_init(&h, err);
  if (st != GF_OK) {
    fclose(f);
    return st;
  }
  unsigned char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    st = gf_sha256_update(&h, buf, n, err);
    if (st != GF_OK) break;
  }
  if (st == GF_OK && ferror(f))
    st = gf_fail(err, GF_EIO, "sha256: read error on %s", path);
  fclose(f);
  if (st != GF_OK) {
    gf_sha256_free(&h);
    return st;
  }
  return gf_sha256_final(&h, hex, err);
}

int gf_sha256_hex_valid(const char *s) {
  if (!s) return 0;
  size_t i = 0;
  for (; s[i]; i++) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return 0;
  }
  return i == GF_SHA256_HEX_LEN;
}
