/* test_slot_state.c - unit: a model slot's states and their checker
 * (gfs_slot_check, GF_ASSERT_STATE at each transition of serve/src/slot.c).
 * A slot goes LOADING -> READY through SWAPPING as versions are installed,
 * references go where they should, and, where GF_STATE_CHECKS is defined
 * (Debug, the sanitizer build), each corrupted slot makes the checker
 * abort a forked child naming itself: a reference dropped once too often,
 * a successor left beside a ready version, a successor that is cur, a
 * failure kept on a ready slot, another model's version. Elsewhere the
 * checker compiles to nothing, and the test says so. No network. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "gfs/slot.h"

/* A stand-in for a loaded version: name, version and one reference, as
 * gf_generator_load leaves them; gf_generator_unref frees it. */
static gf_generator *fake_version(const char *name, const char *version) {
  gf_generator *m = calloc(1, sizeof *m);
  REQUIRE(m);
  atomic_init(&m->refs, 1);
  m->name = strdup(name);
  m->version = strdup(version);
  REQUIRE(m->name && m->version);
  return m;
}

static void slot_with(gfs_slot *s, const char *version) {
  gf_err e;
  REQUIRE(gfs_slot_init(s, "models:/fashion@production", &e) == GF_OK);
  if (version) gfs_slot_install(s, fake_version("fashion", version));
}

/* The transitions of a healthy slot, in every build. */
static void test_transitions(void) {
  gfs_slot s;
  slot_with(&s, NULL);
  CHECK_INT_EQ(s.state, GFS_SLOT_LOADING);
  CHECK(s.cur == NULL && s.next == NULL);
  CHECK(gfs_slot_acquire(&s) == NULL);
  CHECK(!gfs_slots_ready(&s, 1));
  gfs_slot_check(&s);

  gf_generator *v1 = fake_version("fashion", "1");
  gfs_slot_install(&s, v1);
  CHECK_INT_EQ(s.state, GFS_SLOT_READY);
  CHECK(s.cur == v1 && s.next == NULL);
  CHECK_INT_EQ(atomic_load(&s.reloads), 1);
  CHECK(gfs_slots_ready(&s, 1));

  /* a request holds v1 across the swap: it outlives the slot's reference */
  gf_generator *held = gfs_slot_acquire(&s);
  CHECK(held == v1);
  CHECK_INT_EQ(atomic_load(&v1->refs), 2);
  gf_generator *v2 = fake_version("fashion", "2");
  gfs_slot_install(&s, v2);
  CHECK_INT_EQ(s.state, GFS_SLOT_READY);
  CHECK(s.cur == v2 && s.next == NULL);
  CHECK_INT_EQ(atomic_load(&v1->refs), 1);
  CHECK_STR_EQ(held->version, "1");
  gf_generator_unref(held); /* the last reference frees v1 */
  CHECK_INT_EQ(atomic_load(&s.reloads), 2);
  gfs_slot_check(&s);
  CHECK_STR_EQ(gfs_slot_state_name(GFS_SLOT_SWAPPING), "swapping");
  CHECK_STR_EQ(gfs_slot_state_name(GFS_SLOT_FAILED), "failed");
  gfs_slot_free(&s);
}

#if defined(GF_STATE_CHECKS)
typedef void (*corruption)(gfs_slot *s);

/* One reference too few: the slot's own reference was dropped. */
static void refs_dropped(gfs_slot *s) {
  atomic_store(&s->cur->refs, 0);
  gf_generator *m = gfs_slot_acquire(s); /* the check runs first */
  (void)m;
}

/* A ready slot that still holds a successor. */
static void next_beside_ready(gfs_slot *s) {
  s->next = fake_version("fashion", "9");
  gf_generator *m = gfs_slot_acquire(s);
  (void)m;
}

/* A swap whose successor is the version it replaces. */
static void next_is_cur(gfs_slot *s) {
  gf_generator_ref(s->cur);
  s->next = s->cur;
  s->state = GFS_SLOT_SWAPPING;
  gfs_slot_check(s);
}

/* A ready slot that still records a failed load. */
static void failure_on_ready(gfs_slot *s) {
  snprintf(s->last_error, sizeof s->last_error, "version 2: broken");
  s->failed_version = strdup("2");
  gfs_slot_install(s, fake_version("fashion", "3")); /* checked on entry */
}

/* A version of another model in the slot. */
static void other_model(gfs_slot *s) {
  gfs_slot_install(s, fake_version("digits", "1"));
}

/* Runs corrupt on a ready slot in a child; 1 when the child died of
 * SIGABRT after the checker named itself on stderr. */
static int fires(corruption corrupt, const char *what) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  fflush(NULL);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    gfs_slot s;
    slot_with(&s, "1");
    corrupt(&s);
    _exit(0); /* the checker did not fire */
  }
  close(fds[1]);
  char out[2048];
  size_t len = 0;
  ssize_t n;
  while (len < sizeof out - 1 &&
         (n = read(fds[0], out + len, sizeof out - 1 - len)) > 0)
    len += (size_t)n;
  out[len] = '\0';
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  int aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  int named = strstr(out, "state check failed") && strstr(out, "slot_state_ok");
  CHECKF(aborted && named, "%s: the child %s (%d), stderr: %s", what,
         WIFSIGNALED(status) ? "died of a signal" : "exited",
         WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), out);
  return aborted && named;
}

static void test_checker_fires(void) {
  fires(refs_dropped, "a reference dropped once too often");
  fires(next_beside_ready, "a successor beside a ready version");
  fires(next_is_cur, "a successor that is cur");
  fires(failure_on_ready, "a failure kept on a ready slot");
  fires(other_model, "another model's version");
}
#endif

int main(void) {
  test_transitions();
#if defined(GF_STATE_CHECKS)
  test_checker_fires();
#else
  printf("GF_STATE_CHECKS is off in this build: the slot's state checker "
         "compiles to nothing, so there is no abort to prove here (Debug "
         "and the sanitizer build prove it)\n");
#endif
  return check_report();
}
