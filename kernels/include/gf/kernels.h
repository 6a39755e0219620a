/* kernels.h - umbrella header of the kernels library (tensors, context, ops,
 * Philox); include this or the individual headers. */
#ifndef GF_KERNELS_H
#define GF_KERNELS_H

#include "gf/ctx.h"
#include "gf/ops.h"
#include "gf/philox.h"
#include "gf/status.h"
#include "gf/tensor.h"

#endif
