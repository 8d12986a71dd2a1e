/* gpusim shim stub: cudnn_adv.h — legacy RNN / multi-head attention API. Not declared here: the
 * functions are exported by libcudnn.so.9 and return CUDNN_STATUS_NOT_SUPPORTED. */
#ifndef GPUSIM_CUDNN_ADV_H
#define GPUSIM_CUDNN_ADV_H

#include "cudnn_ops.h"

#define CUDNN_ADV_MAJOR 9
#define CUDNN_ADV_MINOR 13
#define CUDNN_ADV_PATCH 1

#ifdef __cplusplus
extern "C" {
#endif

cudnnStatus_t CUDNNWINAPI cudnnAdvVersionCheck(void);

#ifdef __cplusplus
}
#endif

#endif
