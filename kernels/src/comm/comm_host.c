/* comm_host.c - how gf_comm reaches its nccl engine, which lives in the CUDA
 * backend module (libganflow_cuda.so, ../cuda_module.h): the engine's
 * table, taken from the module that ../cuda_loader.c opens on first use,
 * and the services the engine calls back into gf_kernels for
 * (gf_comm_host, comm_impl.h). Not an engine itself; the engines are
 * comm_local.c, comm_mpi.c, comm_nccl.c and comm_tcp.c. */
#include "comm_impl.h"

#ifdef GF_HAVE_NCCL
#include "../cuda_loader.h"
#endif

const gf_comm_host gf_comm_host_services = {
    .poll_start = gf_comm_poll_start,
    .poll_pause = gf_comm_poll_pause,
    .rdv_share = gf_comm_rdv_share,
#ifdef GF_HAVE_MPI
    .mpi_share = gf_comm_mpi_share,
    .mpi_release = gf_comm_mpi_release,
    .mpi_abort_world = gf_comm_mpi_abort_world,
#endif
};

gf_status gf_comm_nccl_engine(const gf_comm_ops **out, gf_err *err) {
  *out = NULL;
#ifdef GF_HAVE_NCCL
  const gf_cuda_module *m = NULL;
  gf_err e;
  if (gf_cuda_module_get(&m, &e) != GF_OK)
    return gf_fail(err, GF_EUNSUPPORTED, "comm: nccl: %s", e.msg);
  if (!m->nccl)
    return gf_fail(err, GF_EUNSUPPORTED,
                   "comm: nccl: the CUDA backend module was built without "
                   "NCCL");
  *out = m->nccl;
  return GF_OK;
#else
  return gf_fail(err, GF_EUNSUPPORTED, "comm: this build has no NCCL");
#endif
}
