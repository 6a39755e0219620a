/* test_parse.c - the one number reader (base/src/parse.c): every rule of
 * gf/parse.h, accepted and refused, the 64-bit boundaries, overflow,
 * subnormals and huge exponents, the one wording of its messages, and the
 * shortest exact text of a double. Unit: no files. */
#include <float.h>

#include "check.h"
#include "gf/parse.h"

/* i64 in the full range: accepted with value want. */
#define I64_OK(s, want)                                                     \
  do {                                                                      \
    int64_t v_ = 12345;                                                     \
    gf_err e_ = {0};                                                        \
    gf_status st_ = gf_parse_i64("--n", s, INT64_MIN, INT64_MAX, &v_, &e_); \
    CHECKF(st_ == GF_OK && v_ == (want), "'%s': %s (%lld)", s, e_.msg,      \
           (long long)v_);                                                  \
  } while (0)

/* Refused with exactly the message msg; *out untouched. */
#define I64_BAD(s, lo, hi, wm)                                             \
  do {                                                                      \
    int64_t v_ = 12345;                                                     \
    gf_err e_ = {0};                                                        \
    gf_status st_ = gf_parse_i64("--n", s, lo, hi, &v_, &e_);               \
    CHECKF(st_ == GF_EINVAL && e_.code == GF_EINVAL && v_ == 12345 &&       \
               strcmp(e_.msg, wm) == 0,                                    \
           "'%s': got '%s', want '%s'", s, e_.msg, wm);                    \
  } while (0)

#define U64_BAD(s, lo, hi, wm)                                             \
  do {                                                                      \
    uint64_t v_ = 12345;                                                    \
    gf_err e_ = {0};                                                        \
    gf_status st_ = gf_parse_u64("--seed", s, lo, hi, &v_, &e_);           \
    CHECKF(st_ == GF_EINVAL && v_ == 12345 && strcmp(e_.msg, wm) == 0,     \
           "'%s': got '%s', want '%s'", s, e_.msg, wm);                    \
  } while (0)

#define F64_OK(s, want)                                                     \
  do {                                                                      \
    double v_ = -7;                                                         \
    gf_err e_ = {0};                                                        \
    gf_status st_ = gf_parse_f64("--x", s, -DBL_MAX, DBL_MAX, &v_, &e_);    \
    CHECKF(st_ == GF_OK && v_ == (want), "'%s': %s (%.17g)", s, e_.msg,     \
           v_);                                                             \
  } while (0)

#define F64_BAD(s, lo, hi, open, wm)                                       \
  do {                                                                      \
    double v_ = -7;                                                         \
    gf_err e_ = {0};                                                        \
    gf_status st_ = gf_parse_f64x("--x", s, lo, hi, open, &v_, &e_);        \
    CHECKF(st_ == GF_EINVAL && v_ == -7 && strcmp(e_.msg, wm) == 0,        \
           "'%s': got '%s', want '%s'", s, e_.msg, wm);                    \
  } while (0)

static void test_i64(void) {
  I64_OK("0", 0);
  I64_OK("7", 7);
  I64_OK("007", 7);
  I64_OK("-0", 0);
  I64_OK("-12", -12);
  I64_OK("9223372036854775807", INT64_MAX);
  I64_OK("-9223372036854775808", INT64_MIN);
  I64_OK("0000000000000000000000000000042", 42);
  const int64_t lo = INT64_MIN, hi = INT64_MAX;
  I64_BAD("", lo, hi, "--n: '' is not an integer");
  {
    int64_t v0 = 5;
    gf_err e0 = {0};
    CHECK(gf_parse_i64("--n", NULL, lo, hi, &v0, &e0) == GF_EINVAL &&
          v0 == 5 && strcmp(e0.msg, "--n: '' is not an integer") == 0);
  }
  I64_BAD(" 2", lo, hi, "--n: ' 2' is not an integer");
  I64_BAD("2 ", lo, hi, "--n: '2 ' is not an integer");
  I64_BAD("\t2", lo, hi, "--n: '\\x092' is not an integer");
  I64_BAD("2\n", lo, hi, "--n: '2\\x0a' is not an integer");
  I64_BAD("+2", lo, hi, "--n: '+2' is not an integer");
  I64_BAD("0x10", lo, hi, "--n: '0x10' is not an integer");
  I64_BAD("1e3", lo, hi, "--n: '1e3' is not an integer");
  I64_BAD("1.0", lo, hi, "--n: '1.0' is not an integer");
  I64_BAD("2abc", lo, hi, "--n: '2abc' is not an integer");
  I64_BAD("-", lo, hi, "--n: '-' is not an integer");
  I64_BAD("--", lo, hi, "--n: '--' is not an integer");
  I64_BAD("--2", lo, hi, "--n: '--2' is not an integer");
  I64_BAD("nan", lo, hi, "--n: 'nan' is not an integer");
  I64_BAD("inf", lo, hi, "--n: 'inf' is not an integer");
  I64_BAD("\xef\xbc\x91", lo, hi, "--n: '\\xef\\xbc\\x91' is not an integer");
  I64_BAD("it's", lo, hi, "--n: 'it\\'s' is not an integer");
  I64_BAD("a\\b", lo, hi, "--n: 'a\\\\b' is not an integer");
  /* overflow: one past each end, and 20 digits */
  I64_BAD("9223372036854775808", lo, hi,
          "--n: 9223372036854775808 is outside [-9223372036854775808, "
          "9223372036854775807]");
  I64_BAD("-9223372036854775809", lo, hi,
          "--n: -9223372036854775809 is outside [-9223372036854775808, "
          "9223372036854775807]");
  I64_BAD("99999999999999999999", 2, 65536,
          "--n: 99999999999999999999 is outside [2, 65536]");
  I64_BAD("-99999999999999999999", 2, 65536,
          "--n: -99999999999999999999 is outside [2, 65536]");
  I64_BAD("184467440737095516160", lo, hi,
          "--n: 184467440737095516160 is outside [-9223372036854775808, "
          "9223372036854775807]");
  /* the bounds are inclusive */
  int64_t v = 0;
  CHECK(gf_parse_i64("--n", "2", 2, 65536, &v, NULL) == GF_OK && v == 2);
  CHECK(gf_parse_i64("--n", "65536", 2, 65536, &v, NULL) == GF_OK);
  I64_BAD("1", 2, 65536, "--n: 1 is outside [2, 65536]");
  I64_BAD("65537", 2, 65536, "--n: 65537 is outside [2, 65536]");
  I64_BAD("-5", 0, 10, "--n: -5 is outside [0, 10]");
  /* a '-' only where the range holds negatives */
  I64_BAD("-0", 0, 10, "--n: -0 is outside [0, 10]");
  I64_BAD("-00", 0, 0, "--n: -00 is outside [0, 0]");
  CHECK(gf_parse_i64("--n", "-0", -1, 10, &v, NULL) == GF_OK && v == 0);
  /* a long input is cut in the message */
  char longv[200];
  memset(longv, '7', sizeof longv - 2);
  longv[sizeof longv - 2] = 'x';
  longv[sizeof longv - 1] = '\0';
  gf_err e = {0};
  CHECK(gf_parse_i64("RANK", longv, 0, 10, &v, &e) == GF_EINVAL);
  CHECKF(strstr(e.msg, "RANK: '777") == e.msg && strstr(e.msg, "...' is not") &&
             strlen(e.msg) < 100,
         "%s", e.msg);
  /* NULL err is fine */
  CHECK(gf_parse_i64("--n", "x", 0, 1, &v, NULL) == GF_EINVAL);
  /* what NULL still says something */
  CHECK(gf_parse_i64(NULL, "x", 0, 1, &v, &e) == GF_EINVAL &&
        strcmp(e.msg, "value: 'x' is not an integer") == 0);
  int iv = 3;
  CHECK(gf_parse_int("--k", "2147483647", 0, INT32_MAX, &iv, &e) == GF_OK &&
        iv == INT32_MAX);
  CHECK(gf_parse_int("--k", "2147483648", 0, INT32_MAX, &iv, &e) ==
            GF_EINVAL &&
        iv == INT32_MAX &&
        strcmp(e.msg, "--k: 2147483648 is outside [0, 2147483647]") == 0);
}

static void test_u64(void) {
  uint64_t v = 0;
  gf_err e = {0};
  CHECK(gf_parse_u64("--seed", "18446744073709551615", 0, UINT64_MAX, &v,
                     &e) == GF_OK &&
        v == UINT64_MAX);
  CHECK(gf_parse_u64("--seed", "0", 0, UINT64_MAX, &v, &e) == GF_OK && v == 0);
  CHECK(gf_parse_u64("--seed", "000000000000000000000001", 0, UINT64_MAX, &v,
                     &e) == GF_OK &&
        v == 1);
  const uint64_t hi = UINT64_MAX;
  U64_BAD("18446744073709551616", 0, hi,
          "--seed: 18446744073709551616 is outside [0, 18446744073709551615]");
  U64_BAD("99999999999999999999", 0, hi,
          "--seed: 99999999999999999999 is outside [0, 18446744073709551615]");
  U64_BAD("-1", 0, hi, "--seed: '-1' is not an unsigned integer");
  U64_BAD("-0", 0, hi, "--seed: '-0' is not an unsigned integer");
  U64_BAD("-99999999999999999999", 0, hi,
          "--seed: '-99999999999999999999' is not an unsigned integer");
  U64_BAD("", 0, hi, "--seed: '' is not an unsigned integer");
  U64_BAD("+1", 0, hi, "--seed: '+1' is not an unsigned integer");
  U64_BAD(" 1", 0, hi, "--seed: ' 1' is not an unsigned integer");
  U64_BAD("1 ", 0, hi, "--seed: '1 ' is not an unsigned integer");
  U64_BAD("0x1", 0, hi, "--seed: '0x1' is not an unsigned integer");
  U64_BAD("1e3", 0, hi, "--seed: '1e3' is not an unsigned integer");
  U64_BAD("5", 6, 9, "--seed: 5 is outside [6, 9]");
  U64_BAD("10", 6, 9, "--seed: 10 is outside [6, 9]");
}

static void test_f64(void) {
  F64_OK("0", 0.0);
  F64_OK("2e-4", 2e-4);
  F64_OK("0.0002", 2e-4);
  F64_OK("0.5", 0.5);
  F64_OK("-0.5", -0.5);
  F64_OK("1E+06", 1e6);
  F64_OK("1e6", 1e6);
  F64_OK("007.50", 7.5);
  F64_OK("1.7976931348623157e308", DBL_MAX);
  F64_OK("-1.7976931348623157e308", -DBL_MAX);
  /* subnormals and underflow read as their nearest double */
  F64_OK("4.9406564584124654e-324", 4.9406564584124654e-324);
  F64_OK("2.2250738585072009e-308", 2.2250738585072009e-308);
  F64_OK("1e-400", 0.0);
  F64_OK("1e-99999999999999999999", 0.0);
  /* -0 is 0, not -0.0, where negatives can be asked for; else refused */
  double z = -7;
  CHECK(gf_parse_f64("--x", "-0", -1, 1, &z, NULL) == GF_OK && z == 0 &&
        !signbit(z));
  CHECK(gf_parse_f64("--x", "-0.0e5", -1, 1, &z, NULL) == GF_OK &&
        !signbit(z));
  F64_BAD("-0", 0, 1, 0, "--x: -0 is outside [0, 1]");
  F64_BAD("-1e-400", 0, 1, 0, "--x: -1e-400 is outside [0, 1]");
  const double lo = -DBL_MAX, hi = DBL_MAX;
  F64_BAD("", lo, hi, 0, "--x: '' is not a number");
  F64_BAD("abc", lo, hi, 0, "--x: 'abc' is not a number");
  F64_BAD(" 2", lo, hi, 0, "--x: ' 2' is not a number");
  F64_BAD("2 ", lo, hi, 0, "--x: '2 ' is not a number");
  F64_BAD("+2", lo, hi, 0, "--x: '+2' is not a number");
  F64_BAD("2\n", lo, hi, 0, "--x: '2\\x0a' is not a number");
  F64_BAD("0x10", lo, hi, 0, "--x: '0x10' is not a number");
  F64_BAD("0x1p3", lo, hi, 0, "--x: '0x1p3' is not a number");
  F64_BAD("nan", lo, hi, 0, "--x: 'nan' is not a number");
  F64_BAD("NaN", lo, hi, 0, "--x: 'NaN' is not a number");
  F64_BAD("inf", lo, hi, 0, "--x: 'inf' is not a number");
  F64_BAD("-infinity", lo, hi, 0, "--x: '-infinity' is not a number");
  F64_BAD(".5", lo, hi, 0, "--x: '.5' is not a number");
  F64_BAD("5.", lo, hi, 0, "--x: '5.' is not a number");
  F64_BAD("1e", lo, hi, 0, "--x: '1e' is not a number");
  F64_BAD("1e+", lo, hi, 0, "--x: '1e+' is not a number");
  F64_BAD("1.5.2", lo, hi, 0, "--x: '1.5.2' is not a number");
  F64_BAD("2abc", lo, hi, 0, "--x: '2abc' is not a number");
  F64_BAD("-", lo, hi, 0, "--x: '-' is not a number");
  F64_BAD("--", lo, hi, 0, "--x: '--' is not a number");
  F64_BAD("1,5", lo, hi, 0, "--x: '1,5' is not a number");
  F64_BAD("\xef\xbc\x91", lo, hi, 0, "--x: '\\xef\\xbc\\x91' is not a number");
  /* too large for a double: outside any range */
  F64_BAD("1e999", lo, hi, 0, "--x: 1e999 is outside [-1.7976931348623157e+308, "
          "1.7976931348623157e+308]");
  F64_BAD("-1e99999999999999999999", 0, 1, 0,
          "--x: -1e99999999999999999999 is outside [0, 1]");
  F64_BAD("1.8e308", 0, 1, 0, "--x: 1.8e308 is outside [0, 1]");
  /* the bounds: closed, open at either end */
  double v = 0;
  CHECK(gf_parse_f64x("--lr", "1", 0, 1, GF_PARSE_LO_OPEN, &v, NULL) == GF_OK);
  F64_BAD("0", 0, 1, GF_PARSE_LO_OPEN, "--x: 0 is outside (0, 1]");
  F64_BAD("1", 0, 1, GF_PARSE_HI_OPEN, "--x: 1 is outside [0, 1)");
  F64_BAD("2", 0, 1, GF_PARSE_LO_OPEN | GF_PARSE_HI_OPEN,
          "--x: 2 is outside (0, 1)");
  F64_BAD("1e-400", 0, 1, GF_PARSE_LO_OPEN, "--x: 1e-400 is outside (0, 1]");
  F64_BAD("0.0005", 0.001, 3600, 0, "--x: 0.0005 is outside [0.001, 3600]");
  F64_BAD("2000000", 0, 1e6, 0, "--x: 2000000 is outside [0, 1000000]");
  CHECK(gf_parse_f64("--x", "0.001", 0.001, 3600, &v, NULL) == GF_OK &&
        v == 0.001);
}

static void test_f64_text(void) {
  static const struct {
    double v;
    const char *text;
  } cases[] = {{2e-4, "0.0002"}, {10, "10"},     {1e-5, "1e-05"},
               {0.05, "0.05"},   {0, "0"},       {0.999, "0.999"},
               {1e6, "1000000"}, {-1, "-1"},     {0.1 + 0.2, "0.30000000000000004"},
               {1e300, "1e+300"}, {DBL_MAX, "1.7976931348623157e+308"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char t[GF_F64_TEXT_MAX];
    gf_f64_text(cases[i].v, t);
    CHECK_STR_EQ(t, cases[i].text);
    double back = -1;
    CHECKF(gf_parse_f64("--x", t, -DBL_MAX, DBL_MAX, &back, NULL) == GF_OK &&
               back == cases[i].v,
           "%s reads back as %.17g", t, back);
  }
}

/* The checker fires: a case with the wrong expectation is seen as wrong
 * (the macros compare, they do not just run). */
static void test_checker_fires(void) {
  int before = check_failures_;
  I64_OK("8", 9);
  I64_BAD("3", 0, 10, "--n: 3 is outside [0, 10]");
  int fired = check_failures_ - before;
  check_failures_ = before;
  CHECK_INT_EQ(fired, 2);
}

int main(void) {
  test_i64();
  test_u64();
  test_f64();
  test_f64_text();
  test_checker_fires();
  return check_report();
}
