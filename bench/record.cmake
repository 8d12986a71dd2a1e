# Record/simulate deduplication: gpusim-bench-record-dedup [--ranks N] [--layers L] [--iters I] [--jitter]
add_executable(gpusim-bench-record-dedup ${CMAKE_CURRENT_LIST_DIR}/record-dedup.cc)
target_link_libraries(gpusim-bench-record-dedup PRIVATE ns3-gpusim)
set_target_properties(gpusim-bench-record-dedup PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
