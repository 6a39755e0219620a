/* generator_sg2.h - internal to gf_model: the stylegan2 side of
 * gf_generator (generator_sg2.c), called by generator.c. */
#ifndef GF_GENERATOR_SG2_H
#define GF_GENERATOR_SG2_H

#include "gf/generator.h"
#include "gf/safetensors.h"

/* Executor e's G (max_batch rows on its ctx, already initialised) from
 * m's stylegan2 config, its weights from f (every tensor of the net
 * present by its official name with its shape, nothing else), and its z,
 * c and ws_mix buffers. What it sets is released by
 * gf_gen_sg2_exec_free, also after a failure. */
gf_status gf_gen_sg2_exec_init(const gf_generator *m, gf_generator_exec *e,
                               const gf_st_file *f, gf_err *err);
void gf_gen_sg2_exec_free(gf_generator_exec *e);

/* One pass of n <= max_batch rows on e (its lock held), each row a
 * forward of its own (batch invariance): z [n, z_dim],
 * labels [n] or NULL, style s (checked; its mix_z and noise_sample0 are
 * this pass's rows'), images to out (host). */
gf_status gf_gen_sg2_pass(gf_generator *m, gf_generator_exec *e,
                          const float *z, const int32_t *labels,
                          const gf_gen_style *s, int n,
                          float *out, gf_err *err);

#endif
