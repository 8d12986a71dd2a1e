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
