/* test_serve_page.c - the HTML page at GET / in a real browser: headless
 * chromium (Debian package) loads it from ganflow-serve and takes a
 * screenshot; the screenshot (decoded with libpng) must show the generated
 * grid - a large block of gray pixels on the page's blue background - and
 * the page source must name the model, its alias and serving version.
 * Exits 77 (skipped) when chromium is not installed. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "mlflow_test.h"
#include "serve_test_util.h"

#define MODEL "page-mlp"

static const char *find_chromium(void) {
  static const char *const names[] = {"/usr/bin/chromium",
                                      "/usr/bin/chromium-browser",
                                      "/usr/bin/google-chrome"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (access(names[i], X_OK) == 0) return names[i];
  return NULL;
}

/* Pixels of an RGB screenshot that are gray (r = g = b within 6) and not
 * near-white: the grid's; the background is #1d3557 and text is light. */
static long gray_pixels(const uint8_t *pix, int w, int h, int c) {
  long n = 0;
  for (long i = 0; i < (long)w * h; i++) {
    const uint8_t *p = pix + i * c;
    int r = p[0], g = c >= 3 ? p[1] : r, b = c >= 3 ? p[2] : r;
    if (abs(r - g) <= 6 && abs(g - b) <= 6 && r < 235) n++;
  }
  return n;
}

int main(void) {
  const char *chromium = find_chromium();
  if (!chromium) SKIP_TEST("chromium is not installed");
  char *uri = test_mlflow_uri();
  char cmd[4096];
  tu_fresh_dir(GF_TEST_TMP);
  mlflow_client *c = test_client_of(uri);
  mlflow_error me;
  char v[32];
  st_register_synthetic(c, MODEL, 11, 0, GF_TEST_TMP, v);
  REQUIRE(mlflow_alias_set(c, MODEL, "production", v, &me) == MLFLOW_OK);

  st_server s;
  const char *extra[] = {"--model", "models:/" MODEL "@production", "--poll",
                         "0", NULL};
  st_server_start(&s, GF_TEST_TMP, uri, extra, 1);
  char url[256];
  snprintf(url, sizeof url, "%s/", s.base);
  st_http page;
  REQUIRE(st_get(url, &page) == 0);
  CHECK_INT_EQ(page.status, 200);
  CHECK(strstr(page.ctype, "text/html") != NULL);
  char want[128];
  snprintf(want, sizeof want, "<th>serving version</th><td>%s</td>", v);
  CHECKF(strstr(page.body, MODEL) && strstr(page.body, "production") &&
             strstr(page.body, want) &&
             strstr(page.body, "src=\"/v1/models/" MODEL "/generate?seed=0"),
         "page:\n%s", page.body);
  st_http_free(&page);

  char shot[600], log[600], profile[600];
  snprintf(shot, sizeof shot, "%s/screenshot.png", GF_TEST_TMP);
  snprintf(log, sizeof log, "%s/chromium.log", GF_TEST_TMP);
  snprintf(profile, sizeof profile, "%s/profile", GF_TEST_TMP);
  snprintf(cmd, sizeof cmd,
           "timeout 120 '%s' --headless --no-sandbox --disable-gpu "
           "--disable-dev-shm-usage --no-first-run --hide-scrollbars "
           "--user-data-dir='%s' --window-size=800,1000 --screenshot='%s' "
           "'%s' > '%s' 2>&1",
           chromium, profile, shot, url, log);
  int rc = system(cmd);
  size_t len = 0;
  FILE *f = fopen(shot, "rb");
  uint8_t *png = NULL;
  if (f) {
    png = malloc(16 << 20);
    len = fread(png, 1, 16 << 20, f);
    fclose(f);
  }
  if (!png || len == 0) {
    st_print_log(log);
    CHECKF(0, "chromium wrote no screenshot (rc %d)", rc);
  } else {
    int w = 0, h = 0, ch = 0;
    uint8_t *pix = NULL;
    REQUIRE(st_png_decode(png, len, &w, &h, &ch, &pix) == 0);
    long gray = gray_pixels(pix, w, h, ch);
    fprintf(stderr, "screenshot %dx%d, %ld grid pixels\n", w, h, gray);
    CHECK(w >= 600 && h >= 600);
    /* The 512x512 grid: most of its 262,144 pixels are gray. */
    CHECKF(gray > 150000, "only %ld gray pixels: no grid on the page", gray);
    /* Without the grid the page is background and text: proves the
     * measure can fail. */
    long bg = 0;
    for (long i = 0; i < (long)w * 40; i++)
      if (abs(pix[i * ch] - 0x1d) < 8) bg++;
    CHECKF(bg > w * 30, "the page's top rows are not the background");
    free(pix);
  }
  free(png);
  CHECK_INT_EQ(st_server_stop(&s), 0);
  mlflow_client_free(c);
  free(uri);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
