/* test_sha256.c - SHA-256 helpers against the FIPS 180-2 test vectors;
 * streaming, one-shot and file digests agree; hex validation. */
#include <string.h>

#include "check.h"
#include "gf/sha256.h"
#include "file_util.h"

int main(void) {
  char hex[GF_SHA256_HEX_LEN + 1];
  gf_err err = {GF_OK, ""};

  CHECK_INT_EQ(gf_sha256_buf(NULL, 0, hex, &err), GF_OK);
  CHECK_STR_EQ(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK_INT_EQ(gf_sha256_buf("abc", 3, hex, &err), GF_OK);
  CHECK_STR_EQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  CHECK_INT_EQ(gf_sha256_buf(two, strlen(two), hex, &err), GF_OK);
  CHECK_STR_EQ(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");

  /* Streaming in uneven pieces gives the one-shot digest. */
  gf_sha256 h;
  REQUIRE(gf_sha256_init(&h, &err) == GF_OK);
  CHECK_INT_EQ(gf_sha256_update(&h, two, 5, &err), GF_OK);
  CHECK_INT_EQ(gf_sha256_update(&h, two + 5, 0, &err), GF_OK);
  CHECK_INT_EQ(gf_sha256_update(&h, two + 5, strlen(two) - 5, &err), GF_OK);
  char hex2[GF_SHA256_HEX_LEN + 1];
  CHECK_INT_EQ(gf_sha256_final(&h, hex2, &err), GF_OK);
  CHECK_STR_EQ(hex2, hex);
  CHECK(h.impl == NULL);
  /* Using a finalised hasher is a state error, not a crash. */
  CHECK_INT_EQ(gf_sha256_update(&h, "x", 1, &err), GF_ESTATE);
  gf_sha256_free(&h);
  gf_sha256_free(NULL);

  /* One million 'a' (vector 3), streamed from a file. */
  char dir[256], path[300];
  tu_mkdtemp(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/a.bin", dir);
  char *big = malloc(1000000);
  REQUIRE(big != NULL);
  memset(big, 'a', 1000000);
  tu_write(path, big, 1000000);
  CHECK_INT_EQ(gf_sha256_file(path, hex, &err), GF_OK);
  CHECK_STR_EQ(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  CHECK_INT_EQ(gf_sha256_buf(big, 1000000, hex2, &err), GF_OK);
  CHECK_STR_EQ(hex2, hex);
  free(big);
  snprintf(path, sizeof path, "%s/missing", dir);
  CHECK_INT_EQ(gf_sha256_file(path, hex, &err), GF_EIO);
  CHECK(strstr(err.msg, "missing") != NULL);
  tu_rmdir(dir);

  CHECK(gf_sha256_hex_valid("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  CHECK(!gf_sha256_hex_valid("E3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  CHECK(!gf_sha256_hex_valid("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85"));
  CHECK(!gf_sha256_hex_valid("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b8555"));
  CHECK(!gf_sha256_hex_valid(NULL));
  return check_report();
}
