/*
 * A stand-in libnvidia-ml.so.1 for tests: the real pynvml loads it through
 * LD_LIBRARY_PATH, so the probe's child process, deadline and crash handling meet a
 * native library that misbehaves the way a broken driver does.
 *
 * STANDIN_NVML_MODE (read at nvmlInitWithFlags):
 *   hang      nvmlInitWithFlags never returns (until killed; after 60 s the process
 *             exits with status 70, so a child nobody killed cannot linger); when
 *             STANDIN_NVML_READY names a file, the pid is written there first, so a
 *             test can wait for the hang instead of sleeping
 *   segv      nvmlInitWithFlags dies with SIGSEGV
 *   mismatch  nvmlInitWithFlags returns NVML_ERROR_LIB_RM_VERSION_MISMATCH (18)
 *   one       one GPU answering name, UUID, PCI, memory and compute capability;
 *             every other NVML function is missing (pynvml: FunctionNotFound)
 *
 * STANDIN_NVML_LOG, when set, names a file that gets one line "init MODE PID" each time
 * nvmlInitWithFlags is entered, before the mode acts: a test reads it to show that the
 * stand-in was loaded and its fault exercised (not stopped earlier, say at "no device").
 *
 * Build: cc -shared -fPIC -o libnvidia-ml.so.1 libnvidia-ml.c
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

static const char *mode(void) {
    const char *m = getenv("STANDIN_NVML_MODE");
    return m ? m : "one";
}

/* Say "hanging now": write the pid to STANDIN_NVML_READY.part, then rename it. */
static void announce_hang(void) {
    const char *ready = getenv("STANDIN_NVML_READY");
    char part[4096];
    FILE *f;
    if (!ready || snprintf(part, sizeof part, "%s.part", ready) >= (int)sizeof part) return;
    f = fopen(part, "w");
    if (!f) return;
    fprintf(f, "%ld", (long)getpid());
    fclose(f);
    rename(part, ready);
}

/* Say "nvmlInit entered" in STANDIN_NVML_LOG (appended: a test may probe twice). */
static void log_init(void) {
    const char *log = getenv("STANDIN_NVML_LOG");
    FILE *f;
    if (!log) return;
    f = fopen(log, "a");
    if (!f) return;
    fprintf(f, "init %s %ld\n", mode(), (long)getpid());
    fclose(f);
}

int nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    log_init();
    if (strcmp(mode(), "hang") == 0) {
        announce_hang();
        for (int i = 0; i < 60; i++) sleep(1);
        _exit(70);
    }
    if (strcmp(mode(), "segv") == 0) {
        raise(SIGSEGV);
    }
    if (strcmp(mode(), "mismatch") == 0) return 18;
    return 0;
}

int nvmlShutdown(void) { return 0; }

int nvmlSystemGetDriverVersion(char *buf, unsigned int len) {
    strncpy(buf, "999.99.99", len);
    return 0;
}

int nvmlSystemGetCudaDriverVersion_v2(int *v) { *v = 12080; return 0; }

int nvmlDeviceGetCount_v2(unsigned int *n) { *n = 1; return 0; }

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev) {
    if (i != 0) return 2;
    *dev = (void *)0x1;
    return 0;
}

int nvmlDeviceGetName(void *dev, char *buf, unsigned int len) {
    (void)dev;
    strncpy(buf, "Stand-in GPU", len);
    return 0;
}

int nvmlDeviceGetUUID(void *dev, char *buf, unsigned int len) {
    (void)dev;
    strncpy(buf, "GPU-00000000-0000-4000-8000-000000000abc", len);
    return 0;
}

int nvmlDeviceGetPciInfo_v3(void *dev, nvmlPciInfo_t *pci) {
    (void)dev;
    memset(pci, 0, sizeof *pci);
    strcpy(pci->busId, "00000000:3B:00.0");
    pci->bus = 0x3b;
    return 0;
}

int nvmlDeviceGetMemoryInfo(void *dev, nvmlMemory_t *mem) {
    (void)dev;
    mem->total = 150754820096ULL;
    mem->used = 1048576ULL;
    mem->free = mem->total - mem->used;
    return 0;
}

int nvmlDeviceGetCudaComputeCapability(void *dev, int *major, int *minor) {
    (void)dev;
    *major = 9;
    *minor = 0;
    return 0;
}
