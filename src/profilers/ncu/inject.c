/* polyprof's fingerprint pass: a CUDA injection library (CUDA_INJECTION64_PATH) that logs, for
 * each kernel launch, the module image it runs and how it was launched, without profiling it.
 *
 * Writes into $POLYPROF_FINGERPRINT_DIR:
 *   launches-<pid>.tsv   one line per event, tab-separated, in the order they happened:
 *     M <seq> <image-file> <bytes>                   a module was loaded (its image saved)
 *     L <seq> <gx> <gy> <gz> <bx> <by> <bz> <dynamic-smem> <symbol>
 *     G <seq> <api>                                  a graph launch: its kernels are not seen
 *     E <message>                                    the pass could not do its work
 *   module-<pid>-<seq>.bin   each module image loaded (polyprof hashes it with SHA-256). Not
 *                            named by cuptiGetCubinCrc: on the H200 it gave two different
 *                            cubins of one size the same CRC.
 * CUPTI names no module for a launch, so polyprof finds it: the image loaded before the launch
 * whose symbol table defines the launched symbol (two different images defining it: not cached). */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_file;
static char dir[4096];
static unsigned long long sequence;

/* Save the image as `name` (written whole under a temporary name, then renamed). */
static void save_image(const void *image, size_t size, const char *name) {
  char path[8192], tmp[8300];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return;
  const char *p = image;
  size_t left = size;
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= (size_t)n;
  }
  close(fd);
  if (left == 0) rename(tmp, path); else unlink(tmp);
}

static void on_module_loaded(const CUpti_ResourceData *data) {
  const CUpti_ModuleResourceData *module = data->resourceDescriptor;
  if (module == NULL || module->pCubin == NULL || module->cubinSize == 0) return;
  char name[128];
  pthread_mutex_lock(&lock);
  unsigned long long seq = sequence++;
  pthread_mutex_unlock(&lock);
  snprintf(name, sizeof name, "module-%d-%llu.bin", (int)getpid(), seq);
  save_image(module->pCubin, module->cubinSize, name);
  pthread_mutex_lock(&lock);
  fprintf(log_file, "M\t%llu\t%s\t%zu\n", seq, name, module->cubinSize);
  fflush(log_file);
  pthread_mutex_unlock(&lock);
}

static void log_launch(const CUpti_CallbackData *info, unsigned gx, unsigned gy, unsigned gz,
                       unsigned bx, unsigned by, unsigned bz, unsigned smem) {
  pthread_mutex_lock(&lock);
  const char *symbol = info->symbolName ? info->symbolName : "?";
  fprintf(log_file, "L\t%llu\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%s\n", sequence++, gx, gy, gz, bx, by,
          bz, smem, symbol);
  fflush(log_file);
  pthread_mutex_unlock(&lock);
}

static void CUPTIAPI callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void *cbdata) {
  (void)userdata;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) on_module_loaded(cbdata);
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const CUpti_CallbackData *info = cbdata;
  if (info->callbackSite != CUPTI_API_ENTER) return;
  switch (cbid) {
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
    const cuLaunchKernel_params *p = info->functionParams;
    log_launch(info, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
               p->blockDimZ, p->sharedMemBytes);
    break;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
    const cuLaunchCooperativeKernel_params *p = info->functionParams;
    log_launch(info, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
               p->blockDimZ, p->sharedMemBytes);
    break;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
    const cuLaunchKernelEx_params *p = info->functionParams;
    const CUlaunchConfig *c = p->config;
    if (c != NULL)
      log_launch(info, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                 c->blockDimZ, c->sharedMemBytes);
    break;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
  case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
    pthread_mutex_lock(&lock);
    fprintf(log_file, "G\t%llu\tcuGraphLaunch\n", sequence++);
    fflush(log_file);
    pthread_mutex_unlock(&lock);
    break;
  default:
    break;
  }
}

int InitializeInjection(void) {
  const char *out = getenv("POLYPROF_FINGERPRINT_DIR");
  if (out == NULL || out[0] == '\0') return 0;
  snprintf(dir, sizeof dir, "%s", out);
  char path[8192];
  snprintf(path, sizeof path, "%s/launches-%d.tsv", dir, (int)getpid());
  log_file = fopen(path, "w");
  if (log_file == NULL) return 0;
  CUpti_SubscriberHandle subscriber;
  CUptiResult status = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)callback, NULL);
  if (status != CUPTI_SUCCESS) {
    const char *why = "?";
    cuptiGetResultString(status, &why);
    fprintf(log_file, "E\tcuptiSubscribe failed: %s\n", why);
    fflush(log_file);
    return 0;
  }
  cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
  const CUpti_CallbackId launches[] = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
      CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
  };
  for (size_t i = 0; i < sizeof launches / sizeof launches[0]; i++)
    cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, launches[i]);
  return 1;
}
