/* gpusim shim stub: cudnn_version.h — the cuDNN version the shim's libcudnn.so.9 emulates.
 * cudnnGetVersion() returns CUDNN_VERSION: programs that compare their build-time version with
 * the runtime's (PyTorch requires runtime minor >= build minor) accept cuDNN 9.0 ... 9.13. */
#ifndef GPUSIM_CUDNN_VERSION_H
#define GPUSIM_CUDNN_VERSION_H

#define CUDNN_MAJOR 9
#define CUDNN_MINOR 13
#define CUDNN_PATCHLEVEL 1

#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)

/* Newest compute capability this cuDNN release knows (12.1). */
#define CUDNN_MAX_SM_MAJOR_NUMBER 12
#define CUDNN_MAX_SM_MINOR_NUMBER 1
#define CUDNN_MAX_DEVICE_VERSION (CUDNN_MAX_SM_MAJOR_NUMBER * 100 + CUDNN_MAX_SM_MINOR_NUMBER * 10)

#endif
