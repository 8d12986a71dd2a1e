/*
 * The shared-memory op ring between a program thread on the shim (shim/src/live.cc, the writer)
 * and the live simulator (live-connections.cc, the reader). One definition for both sides: a
 * plain header, included by the shim too (C++17, no ns-3).
 *
 * Each field sits on its own cache line; the data starts at kData and wraps at the capacity.
 */
#ifndef GPUSIM_LIVE_RING_LAYOUT_H
#define GPUSIM_LIVE_RING_LAYOUT_H

#include <cstddef>

namespace gpusim_live_ring
{
constexpr size_t kHead = 0;       //!< uint64: bytes written so far (the program)
constexpr size_t kTail = 64;      //!< uint64: bytes read so far (the simulator)
constexpr size_t kSleeping = 128; //!< uint32: the simulator is about to sleep, wake it
constexpr size_t kCapacity = 192; //!< uint32: bytes of data the ring holds
constexpr size_t kLifts = 256;    //!< uint32: times the simulator stopped waiting for the thread
constexpr size_t kData = 4096;    //!< where the data starts
} // namespace gpusim_live_ring

#endif // GPUSIM_LIVE_RING_LAYOUT_H
