// One table of ABI values per header set; both are built from abi-values.inc.
#ifndef GPUSIM_SHIM_TEST_ABI_VALUES_H
#define GPUSIM_SHIM_TEST_ABI_VALUES_H
extern "C" const long long gpusim_abi_nvidia[];
extern "C" const long long gpusim_abi_ours[];
extern "C" const char* const gpusim_abi_names[];
extern "C" const int gpusim_abi_count;
#endif
