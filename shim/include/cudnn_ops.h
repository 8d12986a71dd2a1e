/* gpusim shim stub: cudnn_ops.h — the few legacy (pre-graph) declarations cudnn-frontend
 * refers to. libcudnn.so.9 exports every legacy function of cuDNN 9.13, but only so that
 * programs load: they return CUDNN_STATUS_NOT_SUPPORTED (doc/shim.md, "cuDNN"). */
#ifndef GPUSIM_CUDNN_OPS_H
#define GPUSIM_CUDNN_OPS_H

#include "cudnn_graph.h"

#define CUDNN_OPS_MAJOR 9
#define CUDNN_OPS_MINOR 13
#define CUDNN_OPS_PATCH 1

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cudnnTensorStruct* cudnnTensorDescriptor_t;
typedef struct cudnnFilterStruct* cudnnFilterDescriptor_t;

cudnnStatus_t CUDNNWINAPI cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* tensorDesc);
cudnnStatus_t CUDNNWINAPI cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc);
cudnnStatus_t CUDNNWINAPI cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* filterDesc);
cudnnStatus_t CUDNNWINAPI cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                                     cudnnTensorFormat_t format, int nbDims, const int filterDimA[]);
cudnnStatus_t CUDNNWINAPI cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc);
cudnnStatus_t CUDNNWINAPI cudnnOpsVersionCheck(void);

#ifdef __cplusplus
}
#endif

#endif
