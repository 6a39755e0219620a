/* ada_ctl.c - ADA's p controller (gf/ada.h): the official training loop's
 * adjustment of the augmentation probability from E[sign(D(real))], as a
 * pure function of the state. */
#include <math.h>

#include "gf/ada.h"

gf_ada_ctl gf_ada_ctl_start(float p0) {
  gf_ada_ctl c = {.p = p0, .rt = NAN, .sign_sum = 0.0, .sign_count = 0};
  return c;
}

gf_status gf_ada_ctl_step(const gf_ada_ctl *in, double sign_sum,
                          int64_t sign_count, int64_t steps_done,
                          int64_t batch, int interval, double target,
                          double ada_kimg, gf_ada_ctl *out, gf_err *err) {
  if (!in || !out) return gf_fail(err, GF_EINVAL, "ada ctl: NULL state");
  if (batch < 1 || interval < 1 || steps_done < 1)
    return gf_fail(err, GF_EINVAL, "ada ctl: batch %lld, interval %d, "
                   "steps_done %lld (each >= 1)", (long long)batch, interval,
                   (long long)steps_done);
  if (!(ada_kimg > 0) || !isfinite(ada_kimg) || !isfinite(target))
    return gf_fail(err, GF_EINVAL, "ada ctl: ada_kimg %g, target %g", ada_kimg,
                   target);
  if (sign_count < 0 || !(fabs(sign_sum) <= (double)sign_count))
    return gf_fail(err, GF_EINVAL, "ada ctl: a sum of %g signs over %lld "
                   "logits", sign_sum, (long long)sign_count);
  gf_ada_ctl c = *in;
  c.sign_sum += sign_sum;
  c.sign_count += sign_count;
  if (steps_done % interval == 0 && c.sign_count > 0) {
    c.rt = c.sign_sum / (double)c.sign_count;
    double d = c.rt - target;
    double sgn = d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0;
    double adjust = sgn * (double)(batch * interval) / (ada_kimg * 1000.0);
    float p = c.p + (float)adjust;
    c.p = p > 0.0f ? p : 0.0f;
    c.sign_sum = 0.0;
    c.sign_count = 0;
  }
  *out = c;
  return GF_OK;
}
