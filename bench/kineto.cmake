# Kineto reader throughput: gpusim-bench-kineto-parse [trace.json.gz ...]
add_executable(gpusim-bench-kineto-parse ${CMAKE_CURRENT_LIST_DIR}/kineto-parse.cc)
target_link_libraries(gpusim-bench-kineto-parse PRIVATE ns3-gpusim)
target_compile_definitions(gpusim-bench-kineto-parse PRIVATE GPUSIM_SHARED_DIR="${GPUSIM_SHARED_DIR}")
set_target_properties(gpusim-bench-kineto-parse PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
