/* gpusim shim stub: cudnn.h — cuDNN 9 umbrella header (layouts and values of cuDNN 9.13.1). */
#ifndef GPUSIM_CUDNN_H
#define GPUSIM_CUDNN_H

#include "cudnn_version.h"
#include "cudnn_graph.h"
#include "cudnn_ops.h"
#include "cudnn_adv.h"
#include "cudnn_cnn.h"

#endif
