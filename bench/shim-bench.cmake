# Per-call overhead of the shim (included from shim/CMakeLists.txt; run: build/shim/shim_bench).
add_executable(shim_bench ${CMAKE_CURRENT_LIST_DIR}/shim-overhead.cc)
target_link_libraries(shim_bench PRIVATE gpusim_cudart gpusim_nccl gpusim_cublas)
set_target_properties(shim_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/shim)
