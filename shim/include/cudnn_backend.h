/* gpusim shim stub: cudnn_backend.h — cuDNN 8's name for the backend API, kept by cuDNN 9. */
#ifndef GPUSIM_CUDNN_BACKEND_H
#define GPUSIM_CUDNN_BACKEND_H
#include "cudnn_graph.h"
#endif
