# gpusim replay cost (parse + graph + engine): gpusim-bench-replay [trace.json.gz ...]
add_executable(gpusim-bench-replay ${CMAKE_CURRENT_LIST_DIR}/replay.cc)
target_link_libraries(gpusim-bench-replay PRIVATE gpusim-cli)
target_compile_definitions(gpusim-bench-replay PRIVATE GPUSIM_SHARED_DIR="${GPUSIM_SHARED_DIR}")
set_target_properties(gpusim-bench-replay PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
