/* train_config_cost.c - the price flags of ganflow-train resolved as a
 * whole (gf_train_price_resolve in gf/train.h): --price-per-hour or a
 * --price-file entry picked by --instance-kind and --market. The flags
 * themselves are parsed in train_config.c with the others. */
#include <stdio.h>
#include <string.h>

#include "gf/energy.h"
#include "gf/train.h"

gf_status gf_train_price_resolve(gf_train_config *cfg, const char *env_kind,
                                 gf_err *err) {
  if (!cfg->instance_kind[0] && env_kind && *env_kind) {
    size_t n = strlen(env_kind);
    if (n >= sizeof cfg->instance_kind)
      return gf_fail(err, GF_EINVAL, "GANFLOW_INSTANCE_KIND: longer than %zu "
                     "characters", sizeof cfg->instance_kind - 1);
    memcpy(cfg->instance_kind, env_kind, n + 1);
  }
  if (!cfg->price_file[0]) return GF_OK;
  if (cfg->price_per_hour >= 0)
    return gf_fail(err, GF_EINVAL, "--price-per-hour and --price-file: give "
                   "one price (the file's comes from --instance-kind and "
                   "--market)");
  if (!cfg->instance_kind[0])
    return gf_fail(err, GF_EINVAL, "--price-file %s: which entry? Give "
                   "--instance-kind KIND (or GANFLOW_INSTANCE_KIND)",
                   cfg->price_file);
  gf_price_table t;
  gf_price_table_init(&t);
  gf_status s = gf_price_load(cfg->price_file, &t, err);
  const gf_price_entry *e = NULL;
  if (s == GF_OK)
    s = gf_price_lookup(&t, cfg->instance_kind,
                        (gf_price_market)cfg->market, &e, err);
  if (s == GF_OK) {
    if (cfg->price_unit_set && cfg->price_unit != (int)e->unit)
      s = gf_fail(err, GF_EINVAL, "--price-unit %s: %s line %d prices %s %s "
                  "per %s", gf_price_unit_name((gf_price_unit)cfg->price_unit),
                  cfg->price_file, e->line, e->kind,
                  gf_price_market_name(e->market), gf_price_unit_name(e->unit));
    cfg->price_per_hour = e->usd_per_hour;
    cfg->price_unit = (int)e->unit;
  }
  gf_price_table_free(&t);
  if (s != GF_OK) return s == GF_ENOTFOUND || s == GF_EIO || s == GF_EFORMAT
                             ? GF_EINVAL : s;
  return GF_OK;
}
