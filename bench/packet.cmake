# Packet backend vs bare ns-3 (BulkSend/PacketSink) vs flow backend on a ring AllReduce.
add_executable(gpusim-bench-packet-vs-bare ${CMAKE_CURRENT_LIST_DIR}/packet-vs-bare.cc)
target_link_libraries(gpusim-bench-packet-vs-bare PRIVATE ns3-gpusim)
set_target_properties(gpusim-bench-packet-vs-bare PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                                             ${CMAKE_BINARY_DIR}/bin)

# RDMA vs TCP transport vs bare ns-3 UDP: simulated packets per wall second.
add_executable(gpusim-bench-rdma-vs-tcp ${CMAKE_CURRENT_LIST_DIR}/rdma-vs-tcp.cc)
target_link_libraries(gpusim-bench-rdma-vs-tcp PRIVATE ns3-gpusim)
set_target_properties(gpusim-bench-rdma-vs-tcp PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                                          ${CMAKE_BINARY_DIR}/bin)

# Packet backend cost vs cluster size (issue 21): one AllReduce on 8..128 dgx-h100 servers.
add_executable(gpusim-bench-packet-scaling ${CMAKE_CURRENT_LIST_DIR}/packet-scaling.cc)
target_link_libraries(gpusim-bench-packet-scaling PRIVATE ns3-gpusim)
set_target_properties(gpusim-bench-packet-scaling PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                                             ${CMAKE_BINARY_DIR}/bin)
if(GPUSIM_JEMALLOC)
  # Same allocator as the gpusim program (contrib/gpusim/CMakeLists.txt), so the numbers are
  # the CLI's.
  target_link_libraries(gpusim-bench-packet-scaling PRIVATE "-Wl,--no-as-needed"
                        ${GPUSIM_JEMALLOC} "-Wl,--as-needed")
endif()
