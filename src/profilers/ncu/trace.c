/* polyprof's GPU activity tracer: a CUDA injection library (CUDA_INJECTION64_PATH) that records,
 * for the whole life of the process, every kernel, memcpy and memset that ran on the GPU (start
 * and end on the GPU's clock, stream, correlation id, launch configuration, graph id) and, for
 * each launch, copy and memset API call, the OS thread that made it. The eval's scored pass runs
 * the candidate's worker under it: a call's time is what ran on the GPU between the harness's
 * own marker memsets (docs/eval-harness.md, "The GPU timeline").
 *
 * Writes $POLYPROF_TRACE_DIR/trace-<pid>.tsv, one record a line, tab-separated, each line written
 * whole with one write(2) on an O_APPEND descriptor (no stdio buffer: a crash loses at most the
 * records CUPTI has not yet handed over, which it does every FLUSH_PERIOD_MS or on
 * polyprof_trace_flush()):
 *   K <corr> <start> <end> <device> <stream> <gx> <gy> <gz> <bx> <by> <bz> <dyn-smem>
 *     <static-smem> <regs> <graph> <name>                     a kernel ran
 *   C <corr> <start> <end> <device> <stream> <kind> <bytes> <graph>    a memcpy ran
 *   S <corr> <start> <end> <device> <stream> <bytes> <value> <graph>   a memset ran
 *   A <corr> <tid> <api>                                     the driver call that queued it
 *   M <fnv64> <bytes> <file>                                 a module image was loaded (saved)
 *   D <dropped>                                              CUPTI dropped records
 *   E <message>                                              the tracer could not do its work
 * Times are CUPTI's nanosecond timestamps (one clock for all records of the process). */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef POLYPROF_KERNEL_RECORD
#define POLYPROF_KERNEL_RECORD CUpti_ActivityKernel10
#endif
#ifndef POLYPROF_MEMCPY_RECORD
#define POLYPROF_MEMCPY_RECORD CUpti_ActivityMemcpy6
#endif
#ifndef POLYPROF_MEMSET_RECORD
#define POLYPROF_MEMSET_RECORD CUpti_ActivityMemset4
#endif

#define BUFFER_BYTES (4u << 20)
#define FLUSH_PERIOD_MS 50

static int out_fd = -1;
static char dir[4096];
static int save_modules = 1;
static pthread_mutex_t module_lock = PTHREAD_MUTEX_INITIALIZER;

/* One line, written whole (O_APPEND: lines of several threads never interleave). */
static void emit(const char *format, ...) {
  if (out_fd < 0) return;
  char line[8192];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(line, sizeof line - 1, format, args);
  va_end(args);
  if (n < 0) return;
  if ((size_t)n >= sizeof line - 1) {
    n = (int)sizeof line - 2;
    line[n] = '\n';
    n += 1;
  }
  const char *p = line;
  size_t left = (size_t)n;
  while (left > 0) {
    ssize_t w = write(out_fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    left -= (size_t)w;
  }
}

static const char *clean(const char *name) {
  return name == NULL || name[0] == '\0' ? "?" : name;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = aligned_alloc(8, BUFFER_BYTES);
  *size = *buffer == NULL ? 0 : BUFFER_BYTES;
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid) {
  (void)context;
  (void)stream;
  (void)size;
  CUpti_Activity *record = NULL;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const POLYPROF_KERNEL_RECORD *k = (const void *)record;
      emit("K\t%u\t%llu\t%llu\t%u\t%u\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%u\t%u\t%s\n",
           k->correlationId, (unsigned long long)k->start, (unsigned long long)k->end,
           k->deviceId, k->streamId, k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY,
           k->blockZ, k->dynamicSharedMemory, k->staticSharedMemory, k->registersPerThread,
           k->graphId, clean(k->name));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const POLYPROF_MEMCPY_RECORD *m = (const void *)record;
      emit("C\t%u\t%llu\t%llu\t%u\t%u\t%u\t%llu\t%u\n", m->correlationId,
           (unsigned long long)m->start, (unsigned long long)m->end, m->deviceId, m->streamId,
           (unsigned)m->copyKind, (unsigned long long)m->bytes, m->graphId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const POLYPROF_MEMSET_RECORD *m = (const void *)record;
      emit("S\t%u\t%llu\t%llu\t%u\t%u\t%llu\t%u\t%u\n", m->correlationId,
           (unsigned long long)m->start, (unsigned long long)m->end, m->deviceId, m->streamId,
           (unsigned long long)m->bytes, m->value, m->graphId);
      break;
    }
    default:
      break;
    }
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS &&
      dropped > 0)
    emit("D\t%zu\n", dropped);
  free(buffer);
}

/* FNV-1a, 64 bits: names the saved image (polyprof hashes the saved bytes with SHA-256). */
static unsigned long long fnv64(const unsigned char *p, size_t n) {
  unsigned long long h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

static void on_module_loaded(const CUpti_ResourceData *data) {
  const CUpti_ModuleResourceData *module = data->resourceDescriptor;
  if (module == NULL || module->pCubin == NULL || module->cubinSize == 0) return;
  unsigned long long hash = fnv64((const unsigned char *)module->pCubin, module->cubinSize);
  char name[64], path[8192], tmp[8300];
  snprintf(name, sizeof name, "module-%016llx.bin", hash);
  if (!save_modules) {
    emit("M\t%016llx\t%zu\t-\n", hash, module->cubinSize);
    return;
  }
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
  pthread_mutex_lock(&module_lock);
  struct stat st;
  if (stat(path, &st) != 0) {
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      const char *p = module->pCubin;
      size_t left = module->cubinSize;
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
  }
  pthread_mutex_unlock(&module_lock);
  emit("M\t%016llx\t%zu\t%s\n", hash, module->cubinSize, name);
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
  emit("A\t%u\t%ld\t%s\n", info->correlationId, (long)syscall(SYS_gettid),
       clean(info->functionName));
}

/* Exported: the worker calls it (through ctypes) before answering each request, so the records
 * of a request are on disk before its answer reaches the orchestrator. */
__attribute__((visibility("default"))) int polyprof_trace_flush(void) {
  return cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS ? 0 : 1;
}

static void at_exit(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

static int is_traced_api(const char *name) {
  static const char *const prefixes[] = {"cuLaunch", "cuMemcpy", "cuMemset", "cuGraphLaunch"};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  return 0;
}

int InitializeInjection(void) {
  const char *out = getenv("POLYPROF_TRACE_DIR");
  if (out == NULL || out[0] == '\0') return 0;
  snprintf(dir, sizeof dir, "%s", out);
  /* POLYPROF_TRACE_MODULES=0: name each module image by its hash only (the images of a torch
     process are tens of MB, and only the fingerprint join reads them). */
  const char *modules = getenv("POLYPROF_TRACE_MODULES");
  save_modules = !(modules != NULL && strcmp(modules, "0") == 0);
  char path[8192];
  snprintf(path, sizeof path, "%s/trace-%d.tsv", dir, (int)getpid());
  out_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out_fd < 0) return 0;
  CUpti_SubscriberHandle subscriber;
  CUptiResult status = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)callback, NULL);
  if (status != CUPTI_SUCCESS) {
    const char *why = "?";
    cuptiGetResultString(status, &why);
    emit("E\tcuptiSubscribe failed: %s\n", why);
    return 0;
  }
  cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
  /* Every driver entry point that queues GPU work, by name (the ids differ between versions). */
  for (CUpti_CallbackId id = 0; id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++) {
    const char *name = NULL;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &name) == CUPTI_SUCCESS &&
        name != NULL && is_traced_api(name))
      cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  }
  const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                      CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    status = cuptiActivityEnable(kinds[i]);
    if (status != CUPTI_SUCCESS) {
      const char *why = "?";
      cuptiGetResultString(status, &why);
      emit("E\tcuptiActivityEnable(%d) failed: %s\n", (int)kinds[i], why);
    }
  }
  status = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (status != CUPTI_SUCCESS) {
    const char *why = "?";
    cuptiGetResultString(status, &why);
    emit("E\tcuptiActivityRegisterCallbacks failed: %s\n", why);
    return 0;
  }
  cuptiActivityFlushPeriod(FLUSH_PERIOD_MS);
  atexit(at_exit);
  return 1;
}
