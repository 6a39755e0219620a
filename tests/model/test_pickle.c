/* test_pickle.c - the restricted unpickler (gf/pickle.h) on hand-made
 * pickles: two valid streams as Python 3.11's pickle.dumps writes them
 * (protocol 2 and 4; the bytes below, shown by pickletools.dis when they
 * were made), then the refusals: globals off the allow-list (os.system,
 * builtins.eval, subprocess.Popen, a REDUCE of one), truncation at every
 * byte, depth, MARK, stack and node bombs, memo indices out of range,
 * unsupported opcodes, persistent ids where not allowed. Each refusal is
 * shown to be the reason by its message. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "gf/pickle.h"

/* pickle.dumps({'t': (1, 2.5, None, True, b'xy'), 'l': [300, -1, False],
 *               'od': collections.OrderedDict(a=1)}, protocol=2) */
static const uint8_t k_p2[] =
    "\x80\x02\x7d\x71\x00\x28\x58\x01\x00\x00\x00\x74\x71\x01\x28\x4b\x01\x47"
    "\x40\x04"
    "\x00\x00\x00\x00\x00\x00\x4e\x88\x63\x5f\x63\x6f\x64\x65\x63\x73\x0a\x65"
    "\x6e\x63"
    "\x6f\x64\x65\x0a\x71\x02\x58\x02\x00\x00\x00\x78\x79\x71\x03\x58\x06\x00"
    "\x00\x00"
    "\x6c\x61\x74\x69\x6e\x31\x71\x04\x86\x71\x05\x52\x71\x06\x74\x71\x07\x58"
    "\x01\x00"
    "\x00\x00\x6c\x71\x08\x5d\x71\x09\x28\x4d\x2c\x01\x4a\xff\xff\xff\xff\x89"
    "\x65\x58"
    "\x02\x00\x00\x00\x6f\x64\x71\x0a\x63\x63\x6f\x6c\x6c\x65\x63\x74\x69\x6f"
    "\x6e\x73"
    "\x0a\x4f\x72\x64\x65\x72\x65\x64\x44\x69\x63\x74\x0a\x71\x0b\x29\x52\x71"
    "\x0c\x58"
    "\x01\x00\x00\x00\x61\x71\x0d\x4b\x01\x73\x75\x2e";

/* od = OrderedDict([('w', [1, 2]), ('k', 'v')]); o = __main__.Obj() with
 * o.x = 7, o.name = 'n'; pickle.dumps({'od': od, 'o': o, 'again': od,
 * 's': {3}, 'neg': -70000, 'big': 2**70}, protocol=4) */
static const uint8_t k_p4[] =
    "\x80\x04\x95\xa1\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x02\x6f\x64"
    "\x94\x8c"
    "\x0b\x63\x6f\x6c\x6c\x65\x63\x74\x69\x6f\x6e\x73\x94\x8c\x0b\x4f\x72\x64"
    "\x65\x72"
    "\x65\x64\x44\x69\x63\x74\x94\x93\x94\x29\x52\x94\x28\x8c\x01\x77\x94\x5d"
    "\x94\x28"
    "\x4b\x01\x4b\x02\x65\x8c\x01\x6b\x94\x8c\x01\x76\x94\x75\x8c\x01\x6f\x94"
    "\x8c\x08"
    "\x5f\x5f\x6d\x61\x69\x6e\x5f\x5f\x94\x8c\x03\x4f\x62\x6a\x94\x93\x94\x29"
    "\x81\x94"
    "\x7d\x94\x28\x8c\x01\x78\x94\x4b\x07\x8c\x04\x6e\x61\x6d\x65\x94\x8c\x01"
    "\x6e\x94"
    "\x75\x62\x8c\x05\x61\x67\x61\x69\x6e\x94\x68\x05\x8c\x01\x73\x94\x8f\x94"
    "\x28\x4b"
    "\x03\x90\x8c\x03\x6e\x65\x67\x94\x4a\x90\xee\xfe\xff\x8c\x03\x62\x69\x67"
    "\x94\x8a"
    "\x09\x00\x00\x00\x00\x00\x00\x00\x00\x40\x75\x2e";

static const char *const k_allow[] = {"collections.OrderedDict",
                                      "_codecs.encode", "__main__.Obj"};

static void opts_with(gf_pk_opts *o, size_t n_allow) {
  gf_pk_opts_default(o);
  o->allow = k_allow;
  o->n_allow = n_allow;
}

/* Parses len bytes from an exact-size copy (ASan sees any over-read);
 * returns the status, root in *root (the doc in *doc, caller frees). */
static gf_status parse(const void *bytes, size_t len, const gf_pk_opts *o,
                       gf_pk_doc **doc, gf_pk_value **root, gf_err *err,
                       uint8_t **copy_out) {
  uint8_t *copy = malloc(len ? len : 1);
  REQUIRE(copy != NULL);
  memcpy(copy, bytes, len);
  REQUIRE(gf_pk_doc_new(doc, err) == GF_OK);
  gf_status st = gf_pk_parse(*doc, copy, len, o, root, NULL, err);
  *copy_out = copy;
  return st;
}

/* Expects a refusal with code and text in the message. */
static void refused(const void *bytes, size_t len, const gf_pk_opts *o,
                    gf_status code, const char *text) {
  gf_pk_doc *doc;
  gf_pk_value *root = (gf_pk_value *)1;
  gf_err err = {0};
  uint8_t *copy;
  gf_status st = parse(bytes, len, o, &doc, &root, &err, &copy);
  CHECKF(st == code, "%s: got %s (%s)", text, gf_status_name(st), err.msg);
  CHECKF(strstr(err.msg, text) != NULL, "\"%s\" not in \"%s\"", text, err.msg);
  CHECK(root == NULL);
  gf_pk_doc_free(doc);
  free(copy);
}

/* refused() of a string literal's bytes (its NUL left out). */
#define REFUSED(lit, ...) refused(lit, sizeof(lit) - 1, __VA_ARGS__)

/* Streams refused under opts_with(3): bytes, the status, a part of the
 * message that shows the reason. */
#define BAD(lit, code, text) \
  { lit, sizeof(lit) - 1, code, text }
static const struct {
  const char *bytes;
  size_t len;
  gf_status code;
  const char *text;
} k_refusals[] = {
    BAD("\x80\x02\x63os\nsystem\nX\x02\x00\x00\x00ls\x85R.", GF_EINVAL,
        "global os.system is not allowed (byte 2)"),
    BAD("\x80\x04\x8c\x08\x62uiltins\x8c\x04\x65val\x93\x8c\x01\x31\x85R.",
        GF_EINVAL, "global builtins.eval is not allowed"),
    BAD("\x80\x02\x63subprocess\nPopen\n)R.", GF_EINVAL,
        "global subprocess.Popen is not allowed"),
    /* a prefix of an allowed name is not allowed */
    BAD("\x80\x02\x63\x63ollections\nOrdered\n)R.", GF_EINVAL,
        "collections.Ordered is not allowed"),
    BAD("\x80\x02\x63\x63ollection\nOrderedDict\n)R.", GF_EINVAL,
        "collection.OrderedDict is not allowed"),
    /* REDUCE of something that is not a global (a str) */
    BAD("\x80\x02X\x01\x00\x00\x00x)R.", GF_EFORMAT,
        "REDUCE/NEWOBJ of something not a global"),
    /* BUILD onto a plain dict */
    BAD("\x80\x02}}b.", GF_EFORMAT, "BUILD of something not made by a call"),
    /* STACK_GLOBAL of ints */
    BAD("\x80\x04K\x01K\x02\x93.", GF_EFORMAT, "STACK_GLOBAL of non-strings"),
    /* a length past the end: BINUNICODE of 2^31 bytes, BINBYTES8 of 2^63 */
    BAD("\x80\x02X\x00\x00\x00\x80xx.", GF_EFORMAT,
        "string of 2147483648 bytes at byte 2"),
    BAD("\x80\x02X\x05\x00\x00\x00xx.", GF_EFORMAT,
        "truncated at byte 10 (opcode 0x58 at byte 2 needs 5"),
    BAD("\x80\x04\x8e\x00\x00\x00\x00\x00\x00\x00\x80xx.", GF_EFORMAT,
        "more than"),
    /* the GLOBAL line without its newline */
    BAD("\x80\x02\x63os\nsyst", GF_EFORMAT, "without its newline"),
    /* STOP with two values, with an open MARK, underflow */
    BAD("\x80\x02NN.", GF_EFORMAT, "STOP without exactly one value"),
    BAD("\x80\x02N(.", GF_EFORMAT, "STOP with an open MARK"),
    BAD("\x80\x02\x85.", GF_EFORMAT, "stack underflow"),
    BAD("\x80\x02N(\x85.", GF_EFORMAT, "stack underflow"),
    BAD("\x80\x02K\x01K\x02"
        "a.",
        GF_EFORMAT, "cannot add items to a int"),
    BAD("\x80\x02}(K\x01u.", GF_EFORMAT, "odd number of items"),
    BAD("\x80\x02h\x05.", GF_EFORMAT,
        "memo index 5 out of range (0 so far, byte 2)"),
    BAD("\x80\x02N\x94j\x01\x00\x00\x00.", GF_EFORMAT,
        "memo index 1 out of range (1 so far"),
    BAD("\x80\x02Nr\x00\x00\x00\x10.", GF_EFORMAT,
        "memo index 268435456 out of range"),
    BAD("\x80\x02q\x00N.", GF_EFORMAT, "memo store of an empty stack"),
    /* text-protocol and other opcodes outside the list */
    BAD("\x80\x02S'ls'\n.", GF_EUNSUPPORTED,
        "opcode 0x53 at byte 2 is not supported"),
    BAD("\x80\x02(ios\nsystem\n.", GF_EUNSUPPORTED, "opcode 0x69 at byte 3"),
    BAD("\x80\x09N.", GF_EFORMAT, "protocol not 2 to 5"),
};

static void test_refusals(void) {
  gf_pk_opts o;
  opts_with(&o, 3);
  for (size_t i = 0; i < sizeof k_refusals / sizeof k_refusals[0]; i++)
    refused(k_refusals[i].bytes, k_refusals[i].len, &o, k_refusals[i].code,
            k_refusals[i].text);
}

static void test_protocol2(void) {
  gf_pk_opts o;
  opts_with(&o, 2);
  gf_pk_doc *doc;
  gf_pk_value *root;
  gf_err err;
  uint8_t *copy;
  REQUIRE(parse(k_p2, sizeof k_p2 - 1, &o, &doc, &root, &err, &copy) == GF_OK);
  REQUIRE(root->kind == GF_PK_DICT);
  CHECK_INT_EQ(root->kv.n, 6);
  const gf_pk_value *t = gf_pk_get(root, "t");
  REQUIRE(t && t->kind == GF_PK_TUPLE && t->items.n == 5);
  CHECK(t->items.v[0]->kind == GF_PK_INT && t->items.v[0]->i == 1);
  CHECK(t->items.v[1]->kind == GF_PK_FLOAT && t->items.v[1]->f == 2.5);
  CHECK(t->items.v[2]->kind == GF_PK_NONE);
  CHECK(t->items.v[3]->kind == GF_PK_BOOL && t->items.v[3]->i == 1);
  /* bytes under protocol 2: _codecs.encode('xy', 'latin1') */
  const gf_pk_value *b = t->items.v[4];
  CHECK(gf_pk_is(b, "_codecs", "encode") && b->kind == GF_PK_CALL);
  CHECK(b->args->items.n == 2 && gf_pk_str_eq(b->args->items.v[0], "xy"));
  const gf_pk_value *l = gf_pk_get(root, "l");
  REQUIRE(l && l->kind == GF_PK_LIST && l->items.n == 3);
  CHECK(l->items.v[0]->i == 300 && l->items.v[1]->i == -1);
  CHECK(l->items.v[2]->kind == GF_PK_BOOL && l->items.v[2]->i == 0);
  const gf_pk_value *od = gf_pk_get(root, "od");
  CHECK(gf_pk_is(od, "collections", "OrderedDict"));
  const gf_pk_value *a = gf_pk_get(od, "a");
  CHECK(a && a->kind == GF_PK_INT && a->i == 1);
  CHECK(gf_pk_get(root, "missing") == NULL);
  CHECK(t->offset == 74); /* the TUPLE opcode */
  gf_pk_doc_free(doc);
  free(copy);
}

static void test_protocol4(void) {
  gf_pk_opts o;
  opts_with(&o, 3);
  gf_pk_doc *doc;
  gf_pk_value *root;
  gf_err err;
  uint8_t *copy;
  size_t len = sizeof k_p4 - 1;
  REQUIRE(parse(k_p4, len, &o, &doc, &root, &err, &copy) == GF_OK);
  REQUIRE(root->kind == GF_PK_DICT && root->kv.n == 12);
  const gf_pk_value *od = gf_pk_get(root, "od");
  REQUIRE(od && od->kind == GF_PK_CALL &&
          gf_pk_is(od, "collections", "OrderedDict"));
  CHECK(od->args->kind == GF_PK_TUPLE && od->args->items.n == 0);
  const gf_pk_value *w = gf_pk_get(od, "w");
  CHECK(w && w->kind == GF_PK_LIST && w->items.n == 2 && w->items.v[1]->i == 2);
  CHECK(gf_pk_str_eq(gf_pk_get(od, "k"), "v"));
  CHECK(gf_pk_get(root, "again") == od); /* the memo shares the value */
  const gf_pk_value *obj = gf_pk_get(root, "o");
  REQUIRE(obj && obj->kind == GF_PK_CALL && gf_pk_is(obj, "__main__", "Obj"));
  REQUIRE(obj->state && obj->state->kind == GF_PK_DICT);
  CHECK(gf_pk_get(obj->state, "x")->i == 7);
  CHECK(gf_pk_str_eq(gf_pk_get(obj->state, "name"), "n"));
  const gf_pk_value *s = gf_pk_get(root, "s");
  CHECK(s && s->kind == GF_PK_SET && s->items.n == 1 && s->items.v[0]->i == 3);
  CHECK(gf_pk_get(root, "neg")->i == -70000);
  const gf_pk_value *big = gf_pk_get(root, "big");
  CHECK(big && big->kind == GF_PK_BIGINT && big->len == 9 &&
        (uint8_t)big->s[8] == 0x40);
  gf_pk_doc_free(doc);
  free(copy);

  /* Two pickles back to back: *used says where the first ended. */
  uint8_t two[2 * sizeof k_p4];
  memcpy(two, k_p4, len);
  memcpy(two + len, k_p4, len);
  REQUIRE(gf_pk_doc_new(&doc, &err) == GF_OK);
  size_t used = 0;
  CHECK(gf_pk_parse(doc, two, 2 * len, &o, &root, &used, &err) == GF_OK);
  CHECK_INT_EQ(used, len);
  CHECK(gf_pk_parse(doc, two + used, 2 * len - used, &o, &root, &used, &err) ==
        GF_OK);
  CHECK_INT_EQ(used, len);
  gf_pk_doc_free(doc);
}

static void test_globals(void) {
  gf_pk_opts o;
  opts_with(&o, 3);
  /* no allow-list at all: even collections.OrderedDict is refused */
  gf_pk_opts none;
  gf_pk_opts_default(&none);
  refused(k_p4, sizeof k_p4 - 1, &none, GF_EINVAL,
          "global collections.OrderedDict is not allowed (byte 47)");
  /* persistent ids only where allowed */
  static const char persid[] = "\x80\x02K\x01Q.";
  REFUSED(persid, &o, GF_EFORMAT, "persistent ids are not allowed");
  gf_pk_opts op = o;
  op.allow_persid = 1;
  gf_pk_doc *doc;
  gf_pk_value *root;
  gf_err err;
  uint8_t *copy;
  CHECK(parse(persid, sizeof persid - 1, &op, &doc, &root, &err, &copy) ==
        GF_OK);
  CHECK(root && root->kind == GF_PK_PERSID && root->args->i == 1);
  gf_pk_doc_free(doc);
  free(copy);
}

static void test_truncation(void) {
  gf_pk_opts o;
  opts_with(&o, 3);
  const uint8_t *srcs[2] = {k_p2, k_p4};
  size_t lens[2] = {sizeof k_p2 - 1, sizeof k_p4 - 1};
  for (int s = 0; s < 2; s++) {
    for (size_t n = 0; n < lens[s]; n++) {
      char want[64];
      snprintf(want, sizeof want, "truncated at byte %zu", n);
      refused(srcs[s], n, &o, GF_EFORMAT, want);
    }
  }
  gf_pk_opts small = o;
  small.limits.max_str = 3;
  REFUSED("\x80\x04\x8c\x04"
          "abcd.",
          &small, GF_EFORMAT, "string of 4 bytes at byte 2");
}

static void test_bombs(void) {
  gf_pk_opts o;
  opts_with(&o, 3);
  size_t n = 100000;
  uint8_t *b = malloc(n + 8);
  REQUIRE(b != NULL);
  /* TUPLE1 chain: one stack slot, depth n */
  b[0] = 0x80, b[1] = 2, b[2] = 'K', b[3] = 1;
  memset(b + 4, 0x85, n);
  b[4 + n] = '.';
  refused(b, n + 5, &o, GF_EFORMAT, "values nested deeper than 200");
  /* EMPTY_LIST x n then APPEND x n: a list in a list in a list... */
  size_t k = 2000;
  memset(b + 2, ']', k);
  memset(b + 2 + k, 'a', k - 1);
  b[1 + 2 * k] = '.';
  refused(b, 2 * k + 2, &o, GF_EFORMAT, "values nested deeper than 200");
  /* MARK bomb */
  memset(b + 2, '(', n);
  b[2 + n] = '.';
  refused(b, n + 3, &o, GF_EFORMAT, "more than 256 open MARKs");
  /* stack bomb, with a small limit */
  gf_pk_opts small = o;
  small.limits.max_stack = 1000;
  memset(b + 2, 'N', n);
  refused(b, n + 3, &small, GF_EFORMAT, "stack deeper than 1000");
  /* node bomb: a list of many Nones, with a small limit */
  small = o;
  small.limits.max_nodes = 50;
  b[2] = ']', b[3] = '(';
  memset(b + 4, 'N', 100);
  b[104] = 'e', b[105] = '.';
  refused(b, 106, &small, GF_EFORMAT, "more than 50 values");
  /* memo bomb, with a small limit: MEMOIZE of one value again and again */
  small = o;
  small.limits.max_memo = 10;
  b[1] = 4, b[2] = 'N';
  memset(b + 3, 0x94, 20);
  b[23] = '.';
  refused(b, 24, &small, GF_EFORMAT, "more than 10 memo entries");
  free(b);
}

static void test_memo_and_opcodes(void) {
  gf_pk_opts o;
  opts_with(&o, 3);
  refused("", 0, &o, GF_EFORMAT, "truncated at byte 0");
  /* a list appended to itself: allowed (the documented cycle) */
  static const char cyc[] = "\x80\x04]\x94h\x00"
                            "a.";
  gf_pk_doc *doc;
  gf_pk_value *root;
  gf_err err;
  uint8_t *copy;
  CHECK(parse(cyc, sizeof cyc - 1, &o, &doc, &root, &err, &copy) == GF_OK);
  CHECK(root && root->kind == GF_PK_LIST && root->items.n == 1 &&
        root->items.v[0] == root);
  gf_pk_doc_free(doc);
  free(copy);
  /* signed LONG1 and BININT */
  static const char ints[] =
      "\x80\x02(\x8a\x01\xff\x8a\x02\x00\x80\x8a\x00J\x00\x00\x00\x80t.";
  CHECK(parse(ints, sizeof ints - 1, &o, &doc, &root, &err, &copy) == GF_OK);
  REQUIRE(root && root->kind == GF_PK_TUPLE && root->items.n == 4);
  CHECK(root->items.v[0]->i == -1);
  CHECK(root->items.v[1]->i == -32768);
  CHECK(root->items.v[2]->i == 0);
  CHECK(root->items.v[3]->i == INT32_MIN);
  gf_pk_doc_free(doc);
  free(copy);
  CHECK_STR_EQ(gf_pk_kind_name(GF_PK_PERSID), "persid");
  CHECK_STR_EQ(gf_pk_kind_name((gf_pk_kind)99), "?");
}

int main(void) {
  test_protocol2();
  test_protocol4();
  test_refusals();
  test_globals();
  test_truncation();
  test_bombs();
  test_memo_and_opcodes();
  return check_report();
}
