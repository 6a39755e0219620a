/* test_strbuf.c - the one growable text buffer (gf/strbuf.h) that the
 * model writers and the server's answers share: appends across many
 * reallocations, printf past its stack buffer, JSON and HTML escaping byte
 * for byte, take (ownership handed over, buffer left empty), and free of an
 * empty or NULL buffer. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/strbuf.h"

static void test_append_and_take(void) {
  gf_strbuf b;
  gf_strbuf_init(&b);
  CHECK(b.data == NULL && b.len == 0 && !b.failed);
  for (int i = 0; i < 10000; i++) gf_strbuf_puts(&b, "ab");
  CHECK_INT_EQ(b.len, 20000);
  CHECK(b.data && b.data[b.len] == '\0' && b.cap >= b.len + 1);
  gf_strbuf_append(&b, "x\0y", 3); /* bytes, NUL included */
  CHECK_INT_EQ(b.len, 20003);
  CHECK(memcmp(b.data + 20000, "x\0y", 3) == 0);
  size_t len = 0;
  char *s = gf_strbuf_take(&b, &len);
  CHECK(s != NULL);
  CHECK_INT_EQ(len, 20003);
  CHECK(b.data == NULL && b.len == 0);
  free(s);

  /* take of an empty buffer: "" that the caller frees. */
  s = gf_strbuf_take(&b, NULL);
  CHECK(s && s[0] == '\0');
  free(s);
  gf_strbuf_free(&b);
  gf_strbuf_free(NULL);
}

static void test_printf(void) {
  gf_strbuf b;
  gf_strbuf_init(&b);
  gf_strbuf_printf(&b, "%s=%d;", "n", 42);
  char big[3000];
  memset(big, 'z', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  gf_strbuf_printf(&b, "[%s]", big); /* longer than any stack buffer */
  CHECK_INT_EQ(b.len, 5 + 2 + sizeof big - 1);
  CHECK(strncmp(b.data, "n=42;[zzz", 9) == 0);
  CHECK(b.data[b.len - 1] == ']');
  gf_strbuf_free(&b);
}

static void test_escaping(void) {
  gf_strbuf b;
  gf_strbuf_init(&b);
  gf_strbuf_json_cstr(&b, "a\"b\\c\n\r\t\x01/\xc3\xa9");
  CHECK_STR_EQ(b.data, "\"a\\\"b\\\\c\\n\\r\\t\\u0001/\xc3\xa9\"");
  gf_strbuf_free(&b);

  gf_strbuf_json_string(&b, "k\0v", 3); /* an embedded NUL is escaped */
  CHECK_STR_EQ(b.data, "\"k\\u0000v\"");
  gf_strbuf_free(&b);

  gf_strbuf_html(&b, "<a href=\"x\">Tom & Jerry's</a>");
  CHECK_STR_EQ(b.data,
               "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
  gf_strbuf_free(&b);
}

int main(void) {
  test_append_and_take();
  test_printf();
  test_escaping();
  return check_report();
}
