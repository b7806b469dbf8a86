/* transport.c: which transports this build of the distributed layer was compiled with, and
 * the versions of the libraries behind them (MPI for launch, bootstrap and CPU traffic; NCCL
 * for GPU collectives). Both queries are valid before any initialisation. */
#include <stdio.h>
#include "../core/error.h"
#ifdef MT_WITH_MPI
#include <mpi.h>
#endif
#ifdef MT_WITH_NCCL
#include <nccl.h>
#endif

int mt_dist_transports(void) {
  int t = 0;
#ifdef MT_WITH_MPI
  t |= MT_DIST_MPI;
#endif
#ifdef MT_WITH_NCCL
  t |= MT_DIST_NCCL;
#endif
  return t;
}

mt_status mt_dist_transport_version(int transport, char *buf, int len) {
  if (!buf || len <= 0) return mt__error(MT_ERR_ARG, "dist.transportVersion: buffer is NULL or empty");
  buf[0] = '\0';
  if (transport == MT_DIST_MPI) {
#ifdef MT_WITH_MPI
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    if (MPI_Get_library_version(v, &n) != MPI_SUCCESS)
      return mt__error(MT_ERR_INTERNAL, "dist.transportVersion: MPI_Get_library_version failed");
    snprintf(buf, (size_t)len, "%.*s", n, v);
    return MT_OK;
#else
    return mt__error(MT_ERR_UNSUPPORTED,
                     "dist: this build of moontorch has no MPI (install Open MPI, "
                     "e.g. tools/deps.sh, and rebuild with -DMT_MPI=ON)");
#endif
  }
  if (transport == MT_DIST_NCCL) {
#ifdef MT_WITH_NCCL
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess)
      return mt__error(MT_ERR_INTERNAL, "dist.transportVersion: ncclGetVersion failed");
    /* NCCL 2.9+ encodes major*10000 + minor*100 + patch */
    snprintf(buf, (size_t)len, "NCCL %d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    return MT_OK;
#else
    return mt__error(MT_ERR_UNSUPPORTED,
                     "dist: this build of moontorch has no NCCL (it needs the CUDA "
                     "toolkit's NCCL; rebuild with -DMT_NCCL=ON)");
#endif
  }
  return mt__error(MT_ERR_ARG, "dist.transportVersion: unknown transport %d (expected %d: MPI or %d: NCCL)", transport,
                   MT_DIST_MPI, MT_DIST_NCCL);
}
