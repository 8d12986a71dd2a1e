/* gpusim shim stub: cudnn_cnn.h — legacy convolution API: only what cudnn-frontend refers to
 * (exported by libcudnn.so.9, returns CUDNN_STATUS_NOT_SUPPORTED). */
#ifndef GPUSIM_CUDNN_CNN_H
#define GPUSIM_CUDNN_CNN_H

#include "cudnn_ops.h"

#define CUDNN_CNN_MAJOR 9
#define CUDNN_CNN_MINOR 13
#define CUDNN_CNN_PATCH 1

#ifdef __cplusplus
extern "C" {
#endif

cudnnStatus_t CUDNNWINAPI cudnnReorderFilterAndBias(cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,
                                                    cudnnReorderType_t reorderType, const void* filterData,
                                                    void* reorderedFilterData, int reorderBias, const void* biasData,
                                                    void* reorderedBiasData);
cudnnStatus_t CUDNNWINAPI cudnnCnnVersionCheck(void);

#ifdef __cplusplus
}
#endif

#endif
