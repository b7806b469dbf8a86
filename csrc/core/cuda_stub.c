/* cuda_stub.c: linked only into builds without CUDA, so every CUDA request gets a clear error. */
#include "backend.h"
#include "error.h"

const mt_backend *mt__cuda_backend_get(void) { return NULL; }
int mt_cuda_is_compiled(void) { return 0; }
int mt_cuda_device_count(void) { return 0; }

static mt_status no_cuda(const char *op) {
  return mt__error(MT_ERR_CUDA, "%s: this build of moontorch has no CUDA support", op);
}
mt_status mt_cuda_synchronize(int device) {
  (void)device;
  return no_cuda("cuda.synchronize");
}
mt_status mt_cuda_empty_cache(int device) {
  (void)device;
  return no_cuda("cuda.emptyCache");
}
mt_status mt_cuda_stream(int device, void **out) {
  (void)device;
  (void)out;
  return no_cuda("cuda.stream");
}
mt_status mt_cuda_device_name(int device, char *buf, int len) {
  (void)device;
  (void)buf;
  (void)len;
  return no_cuda("cuda.deviceName");
}
mt_status mt_cuda_set_allow_tf32(int allow, int *previous) {
  (void)allow;
  if (previous) *previous = 0;
  return no_cuda("cuda.allowTF32");
}
int mt_cuda_get_allow_tf32(void) { return 0; }
mt_status mt_cuda_set_conv_algorithm(int mode, double workspace_mb) {
  (void)mode;
  (void)workspace_mb;
  return no_cuda("cuda.convAlgorithm");
}
mt_status mt_cuda_get_conv_algorithm(int *mode, double *workspace_mb) {
  (void)mode;
  (void)workspace_mb;
  return no_cuda("cuda.convAlgorithm");
}
